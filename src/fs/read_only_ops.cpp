// Read-only mounts: every operation that would change the volume is
// answered EROFS by the daemon itself. The kernel's mount is read-only too
// and refuses first; this is the second wall, for a kernel that lets a
// request through (a `mount -o remount,rw` done behind the daemon's back)
// and so that nothing but reads ever reaches the metadata layer, which
// refuses changes a third time (meta::Options::read_only).
#include <fcntl.h>
#include <linux/fs.h>

#include <cerrno>

#include "fs_context.h"
#include "peregrine/fs/grow_ioctl.h"
#include "peregrine/fs/replace_ioctl.h"
#include "peregrine/fs/restripe_ioctl.h"

namespace peregrine::fs {
namespace {

// The table's own open: set once, by make_read_only() on the main thread
// before the session exists; only read afterwards.
void (*g_open)(fuse_req_t, fuse_ino_t, fuse_file_info*) = nullptr;

void open_for_reading(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
    fuse_reply_err(req, EROFS);
    return;
  }
  g_open(req, ino, fi);
}

}  // namespace

void make_read_only(fuse_lowlevel_ops& ops) {
  g_open = ops.open;
  ops.open = open_for_reading;
  ops.setattr = [](fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) { fuse_reply_err(req, EROFS); };
  ops.mknod = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EROFS); };
  ops.mkdir = [](fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EROFS); };
  ops.symlink = [](fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); };
  ops.link = [](fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); };
  ops.unlink = [](fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); };
  ops.rmdir = [](fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); };
  ops.rename = [](fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
    fuse_reply_err(req, EROFS);
  };
  ops.create = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { fuse_reply_err(req, EROFS); };
  // WRITE: serve_write() refuses it (FsContext::read_only), on both
  // transports: the io-uring rings hand writes to it without this table.
  ops.write_buf = nullptr;
  ops.copy_file_range = nullptr;  // the kernel falls back to read + write, refused above
  ops.fallocate = [](fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) { fuse_reply_err(req, EROFS); };
  ops.setxattr = [](fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { fuse_reply_err(req, EROFS); };
  ops.removexattr = [](fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); };
  // FITRIM, online grow, replace and restripe, the ioctls served, write to the members.
  ops.ioctl = [](fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info*, unsigned, const void*, size_t,
                 size_t) {
    const bool served = cmd == FITRIM || cmd == static_cast<unsigned int>(kGrowIoctl) ||
                        cmd == static_cast<unsigned int>(kReplaceIoctl) ||
                        cmd == static_cast<unsigned int>(kRestripeIoctl);
    fuse_reply_err(req, served ? EROFS : ENOTTY);
  };
}

}  // namespace peregrine::fs
