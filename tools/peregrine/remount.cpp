#include "remount.h"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "peregrine/volume/mount_table.h"
#include "stats_document.h"

namespace peregrine::cli {
namespace {

constexpr int kUsageError = 1;
constexpr int kMountFailed = 32;

int error(int code, const std::string& message) {
  std::fprintf(stderr, "mount.peregrine: remount: %s\n", message.c_str());
  return code;
}

struct KernelFlag {
  std::string_view set, clear;
  unsigned long flag;
};

// What a remount may change; the rest of the mount's state stays.
constexpr KernelFlag kFlags[] = {
    {"ro", "rw", MS_RDONLY},       {"nosuid", "suid", MS_NOSUID},     {"nodev", "dev", MS_NODEV},
    {"noexec", "exec", MS_NOEXEC}, {"sync", "async", MS_SYNCHRONOUS}, {"dirsync", "", MS_DIRSYNC},
};

// The mount's flags now, as MS_* bits (statvfs asks the daemon nothing but
// statfs, which it answers while serving).
unsigned long current_flags(const struct statvfs& st) {
  unsigned long out = 0;
  const std::pair<unsigned long, unsigned long> map[] = {
      {ST_RDONLY, MS_RDONLY},         {ST_NOSUID, MS_NOSUID},           {ST_NODEV, MS_NODEV},
      {ST_NOEXEC, MS_NOEXEC},         {ST_SYNCHRONOUS, MS_SYNCHRONOUS}, {ST_NOATIME, MS_NOATIME},
      {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME},
  };
  for (auto [st_bit, ms_bit] : map)
    if (st.f_flag & st_bit) out |= ms_bit;
  return out;
}

}  // namespace

int remount_volume(const std::string& dir, const std::string& options, bool verbose, bool fake) {
  bool is_peregrine = false;
  for (const MountTableEntry& m : read_mount_table())
    if (m.mountpoint == resolve_parent(dir)) is_peregrine = m.fstype == "fuse.peregrine";
  if (!is_peregrine) return error(kMountFailed, dir + ": no peregrine volume is mounted there");
  struct statvfs st;
  if (::statvfs(dir.c_str(), &st) != 0) return error(kMountFailed, dir + ": " + std::strerror(errno));
  unsigned long flags = current_flags(st);
  // Later options win; anything else (the mount's own options as mount(8)
  // repeats them, peregrine settings, atime choices) stays as mounted.
  size_t start = 0;
  while (start <= options.size()) {
    size_t comma = options.find(',', start);
    std::string_view item =
        std::string_view(options).substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (const KernelFlag& f : kFlags) {
      if (item == f.set) flags |= f.flag;
      if (!f.clear.empty() && item == f.clear) flags &= ~f.flag;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!(flags & MS_RDONLY)) {
    auto doc = read_stats_document(dir);
    if (!doc) return error(kMountFailed, dir + ": the daemon does not answer");
    if (doc->value("read_only", false))
      return error(kMountFailed, dir +
                                     ": the daemon serves this volume read-only (mounted ro, or a metadata "
                                     "write failed): unmount it and mount it read-write");
  }
  if (verbose || fake)
    std::fprintf(stderr, "mount.peregrine: %sremount %s %s\n", fake ? "would " : "", dir.c_str(),
                 (flags & MS_RDONLY) ? "read-only" : "read-write");
  if (fake) return 0;
  // FUSE ignores the data of a remount through mount(2); the flags are
  // what changes.
  if (::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | flags, nullptr) != 0)
    return error(errno == EINVAL ? kUsageError : kMountFailed, dir + ": " + std::strerror(errno));
  return 0;
}

}  // namespace peregrine::cli
