// FITRIM (`fstrim MOUNTPOINT`), and the dispatch of the other ioctls the
// daemon serves: online grow, replace and restripe (fs_grow.cpp,
// fs_replace.cpp, fs_restripe.cpp).
//
// The kernel forwards an ioctl on a FUSE directory (fstrim opens the mount
// point) only to a daemon that asked for FUSE_CAP_IOCTL_DIR at INIT (libfuse
// answers ENOTTY for it otherwise). A filesystem's ioctls are "restricted":
// the kernel copies in and out the _IOC_SIZE(cmd) bytes the command encodes,
// here FITRIM = _IOWR('X', 121, struct fstrim_range), 24 bytes each way, so
// the range arrives in in_buf and the reply carries it back with len set to
// the bytes discarded, as fstrim -v prints.
//
// Runs on a classic worker or a blocking-op thread (never a ring thread:
// uring_transport.cpp): it waits for the journal and for member discards.
#include <linux/fs.h>

#include <cerrno>
#include <cstring>

#include "fs_context.h"
#include "peregrine/fs/grow_ioctl.h"
#include "peregrine/fs/replace_ioctl.h"
#include "peregrine/fs/restripe_ioctl.h"

namespace peregrine::fs {
namespace {

void op_ioctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info*, unsigned flags, const void* in_buf,
              size_t in_bufsz, size_t out_bufsz) {
  if (cmd == static_cast<unsigned int>(kGrowIoctl)) {
    serve_grow_ioctl(req, flags, in_bufsz, out_bufsz);
    return;
  }
  if (cmd == static_cast<unsigned int>(kReplaceIoctl)) {
    serve_replace_ioctl(req, flags, in_buf, in_bufsz, out_bufsz);
    return;
  }
  if (cmd == static_cast<unsigned int>(kRestripeIoctl)) {
    serve_restripe_ioctl(req, flags, in_buf, in_bufsz, out_bufsz);
    return;
  }
  if (cmd != FITRIM) {
    fuse_reply_err(req, ENOTTY);
    return;
  }
  if (flags & FUSE_IOCTL_UNRESTRICTED) {  // only CUSE has these
    fuse_reply_err(req, EINVAL);
    return;
  }
  // FITRIM needs CAP_SYS_ADMIN on every local filesystem; FUSE tells the
  // daemon only the caller's uid, and root is who holds it.
  if (fuse_req_ctx(req)->uid != 0) {
    fuse_reply_err(req, EPERM);
    return;
  }
  fstrim_range range;
  if (in_buf == nullptr || in_bufsz != sizeof range || out_bufsz < sizeof range) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  std::memcpy(&range, in_buf, sizeof range);
  FsContext& fs = context(req);
  // What was deleted up to now is freed by journal records that may not be
  // durable yet, and only durable frees are trimmed: commit them first.
  if (int rc = fs.meta.sync(); rc != 0) {
    fuse_reply_err(req, rc == -EROFS ? EROFS : EIO);
    return;
  }
  uint64_t trimmed = 0;
  int rc = fs.meta.trim(range.start, range.len, range.minlen, &trimmed);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  range.len = trimmed;
  fuse_reply_ioctl(req, 0, &range, sizeof range);
}

}  // namespace

void add_trim_ops(fuse_lowlevel_ops& ops) { ops.ioctl = op_ioctl; }

}  // namespace peregrine::fs
