// MemberFile::discard: TRIM of a member range (member_file.h).
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>

#include "peregrine/backend/member_file.h"

namespace peregrine {

int MemberFile::discard(uint64_t offset, uint64_t len) const {
  if (len == 0) return 0;
  if (info_.is_block_device) {
    uint64_t range[2] = {offset, len};
    return ::ioctl(fd_, BLKDISCARD, range) == 0 ? 0 : -errno;
  }
  // Past the end of the file there is nothing to give back, and a member
  // file is never grown by a discard (KEEP_SIZE).
  if (offset >= info_.size_bytes) return 0;
  if (len > info_.size_bytes - offset) len = info_.size_bytes - offset;
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) == 0)
    return 0;
  return errno == ENOSYS ? -EOPNOTSUPP : -errno;
}

}  // namespace peregrine
