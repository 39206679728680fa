#include "member_zero.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace peregrine {
namespace {

// Asks the storage to zero [begin, end) without moving the bytes: a hole in
// a file (tmpfs members then do not pin RAM for an unused metadata area),
// BLKZEROOUT on a device (write-zeroes/unmap on SSDs). False when it cannot.
bool zero_in_place(const MemberFile& m, uint64_t begin, uint64_t end) {
  if (m.info().is_block_device) {
    uint64_t range[2] = {begin, end - begin};
    return ::ioctl(m.fd(), BLKZEROOUT, range) == 0;
  }
  return ::fallocate(m.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                     static_cast<off_t>(end - begin)) == 0;
}

}  // namespace

Status zero_member_range(const MemberFile& m, uint64_t begin, uint64_t end, const AlignedBuffer& zeros) {
  if (begin >= end) return Status::ok();
  // Under the power-cut layer (tests), a hole punched past it would be
  // durable at once, so a cut could never undo a zeroing that lacks its
  // sync; written zeros are cut at like every other write.
  if (!m.writes_routed() && zero_in_place(m, begin, end)) return Status::ok();
  return write_member_zeros(m, begin, end, zeros);
}

Status write_member_zeros(const MemberFile& m, uint64_t begin, uint64_t end, const AlignedBuffer& zeros) {
  for (uint64_t off = begin; off < end;) {
    uint64_t len = std::min<uint64_t>(zeros.size(), end - off);
    if (int rc = m.pwrite_full(zeros.data(), len, off); rc < 0)
      return Status::error(-rc, "member " + m.info().path + ": cannot write at offset " + std::to_string(off) + ": " +
                                    std::strerror(-rc));
    off += len;
  }
  return Status::ok();
}

}  // namespace peregrine
