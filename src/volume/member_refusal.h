// The errors the volume commands (mkfs, mount's assembly, grow, replace,
// restripe) give about a member: a refusal that names it and says why,
// an IO error that names it, the action and the offset, and how they
// show a number in hex. One wording for all of them. Internal to
// peregrine_volume.
// Thread rules: pure functions, any thread.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"

namespace peregrine {

// "member PATH: WHY" (EINVAL): a member of the volume that cannot be used.
inline Status refuse_member(const std::string& path, const std::string& why) {
  return Status::error(EINVAL, "member " + path + ": " + why);
}

// "new member PATH: WHY" (EINVAL): a member a replace or restripe was to add.
inline Status refuse_new_member(const std::string& path, const std::string& why) {
  return Status::error(EINVAL, "new member " + path + ": " + why);
}

// "member PATH: cannot WHAT at offset N: strerror(err)", with err.
inline Status member_io_error(const MemberFile& m, const char* what, uint64_t offset, int err) {
  return Status::error(err, "member " + m.info().path + ": cannot " + what + " at offset " + std::to_string(offset) +
                                ": " + std::strerror(err));
}

// A number as the messages show flags and checksums: "0x1f".
inline std::string hex_number(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace peregrine
