#include "peregrine/volume/member_lock.h"

#include <sys/file.h>

#include <cerrno>
#include <cstring>

namespace peregrine {

Status lock_member(const MemberFile& member, LockMode mode) {
  int op = (mode == LockMode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while (::flock(member.fd(), op) != 0) {
    int e = errno;
    if (e == EINTR) continue;
    if (e == EWOULDBLOCK)
      return Status::error(EBUSY, "member " + member.info().path + ": in use by another peregrine process");
    return Status::error(e, "member " + member.info().path + ": cannot lock: " + std::strerror(e));
  }
  return Status::ok();
}

Status lock_members(std::span<const MemberFile> members, LockMode mode) {
  for (const MemberFile& m : members)
    if (Status s = lock_member(m, mode); !s) return s;
  return Status::ok();
}

}  // namespace peregrine
