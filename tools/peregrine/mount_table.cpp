#include "mount_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "peregrine/volume/mount_table.h"

namespace peregrine::cli {
namespace {

std::vector<MountEntry> read_mount_table() {
  std::vector<MountEntry> table;
  for (MountTableEntry& e : peregrine::read_mount_table())
    table.push_back(MountEntry{std::move(e.mountpoint), std::move(e.fstype), std::move(e.source)});
  return table;
}

std::string resolved(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) return path;
  std::string out = r;
  std::free(r);
  return out;
}

}  // namespace

std::optional<MountEntry> mount_of(const std::string& path) {
  std::optional<MountEntry> best;
  for (MountEntry& e : read_mount_table()) {
    bool inside = path == e.mountpoint || e.mountpoint == "/" ||
                  (path.starts_with(e.mountpoint) && path[e.mountpoint.size()] == '/');
    if (inside && (!best || e.mountpoint.size() >= best->mountpoint.size())) best = std::move(e);
  }
  return best;
}

Expected<MountEntry> peregrine_mount(const std::string& arg) {
  struct stat st;
  if (::stat(arg.c_str(), &st) != 0) {
    int e = errno;
    if (dead_mount_errno(e)) return Status::error(e, dead_mount_advice(arg));
    return Status::error(e, arg + ": " + std::strerror(e));
  }
  char* path = ::realpath(arg.c_str(), nullptr);
  if (path == nullptr) return Status::error(errno, arg + ": " + std::strerror(errno));
  auto m = mount_of(path);
  std::free(path);
  if (!m) return Status::error(EINVAL, arg + ": not a peregrine mount (no mount holds it)");
  if (m->fstype != "fuse.peregrine")
    return Status::error(EINVAL,
                         arg + ": not a peregrine mount (it is on " + m->mountpoint + ", of type " + m->fstype + ")");
  return *m;
}

std::optional<MountEntry> mount_at(const std::string& dir) {
  std::optional<MountEntry> last;
  for (MountEntry& e : read_mount_table())
    if (e.mountpoint == dir) last = std::move(e);
  return last;
}

std::string dead_mount_advice(const std::string& path) {
  // realpath() fails on the dead mount itself; its parent still resolves.
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  if (abs.has_filename() == false) abs = abs.parent_path();
  std::string full = (std::filesystem::path(resolved(abs.parent_path().string())) / abs.filename()).string();
  std::string what = "a dead mount";
  if (auto m = mount_at(full); m && m->fstype.starts_with("fuse")) {
    what = m->fstype == "fuse.peregrine" ? "a dead peregrine mount" : "a dead " + m->fstype + " mount";
    if (!m->source.empty()) what += " (" + m->source + ")";
  }
  return path + ": " + what + ": its daemon is gone (transport endpoint is not connected); clear it with 'umount " +
         path + "' or 'fusermount3 -u " + path + "'";
}

Status check_mountpoint(const std::string& mountpoint, bool force) {
  struct stat st {};
  if (::stat(mountpoint.c_str(), &st) != 0) {
    int e = errno;
    if (dead_mount_errno(e)) {
      return Status::error(ENOTCONN, "mountpoint " + dead_mount_advice(mountpoint) + ", then mount again");
    }
    return Status::error(e, "mountpoint " + mountpoint + ": " + std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) return Status::error(ENOTDIR, "mountpoint " + mountpoint + ": not a directory");
  if (force) return Status::ok();
  auto m = mount_at(resolved(mountpoint));
  if (m && m->fstype == "fuse.peregrine") {
    std::string volume = m->source.starts_with("peregrine:") ? "volume " + m->source.substr(10) + " (" + m->source + ")"
                         : m->source.empty() || m->source == "peregrine" ? "a peregrine volume"
                                                                         : "volume " + m->source;
    return Status::error(EBUSY, "mountpoint " + mountpoint + ": " + volume +
                                    " is mounted there already; unmount it first ('umount " + mountpoint +
                                    "'), or give --force to mount over it (which hides it)");
  }
  return Status::ok();
}

std::optional<MountEntry> peregrine_mount_at(const std::string& arg) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(arg, ec).lexically_normal();
  if (ec) return std::nullopt;
  std::string path = abs.string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  auto m = mount_at(resolve_parent(path));
  if (!m || m->fstype != "fuse.peregrine") return std::nullopt;
  return m;
}

}  // namespace peregrine::cli
