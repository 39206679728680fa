#include "member_identity.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace peregrine {
namespace {

bool same(const MemberIdentity& a, const MemberIdentity& b) {
  if (a.exists != b.exists) return false;
  if (!a.exists) return a.absolute == b.absolute;
  if (a.is_block_device != b.is_block_device) return false;
  return a.is_block_device ? a.dev == b.dev : (a.dev == b.dev && a.ino == b.ino);
}

}  // namespace

Expected<std::vector<MemberIdentity>> identify_members(const std::vector<std::string>& paths, bool allow_missing) {
  std::vector<MemberIdentity> out;
  out.reserve(paths.size());
  for (const std::string& path : paths) {
    MemberIdentity id;
    id.path = path;
    std::error_code ec;
    // Absolute first: weakly_canonical keeps a bare relative name ("m0")
    // relative, and its parent_path() would then be "".
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    if (!ec) id.absolute = std::filesystem::weakly_canonical(abs, ec).string();
    if (ec) id.absolute = abs.empty() ? path : abs.lexically_normal().string();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      int e = errno;
      if (e != ENOENT || !allow_missing) return Status::error(e, "member " + path + ": " + std::strerror(e));
    } else {
      id.exists = true;
      if (S_ISBLK(st.st_mode)) {
        id.is_block_device = true;
        id.dev = st.st_rdev;
      } else if (S_ISREG(st.st_mode)) {
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.size = static_cast<uint64_t>(st.st_size);
      } else {
        return Status::error(EINVAL, "member " + path + ": not a regular file or block device");
      }
    }
    for (const MemberIdentity& earlier : out) {
      if (same(earlier, id))
        return Status::error(EINVAL, "member " + path + ": same " + (id.is_block_device ? "device" : "file") +
                                         " as member " + earlier.path + " (given twice)");
    }
    out.push_back(std::move(id));
  }
  return out;
}

}  // namespace peregrine
