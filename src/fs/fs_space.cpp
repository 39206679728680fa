// Space: statfs, fallocate (allocate, keep size, punch hole, zero range)
// and lseek's SEEK_DATA / SEEK_HOLE.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/statvfs.h>

#include <cerrno>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

void op_statfs(fuse_req_t req, fuse_ino_t) {
  meta::StatFs s;
  int rc = context(req).meta.statfs(&s);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  struct statvfs st {};
  st.f_bsize = s.block_size;
  st.f_frsize = s.block_size;
  st.f_blocks = s.total_blocks;
  st.f_bfree = s.free_blocks;
  st.f_bavail = s.avail_blocks;
  st.f_files = s.files;
  st.f_ffree = s.files_free;
  st.f_favail = s.files_free;
  st.f_namemax = s.name_max;
  fuse_reply_statfs(req, &st);
}

void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off_in, off_t len_in, fuse_file_info*) {
  FsContext& fs = context(req);
  uint64_t off = static_cast<uint64_t>(off_in);
  uint64_t len = static_cast<uint64_t>(len_in);
  ExclusiveGate gate(fs.gates, ino);
  int rc = fs.tails.write_back_and_drop(ino, fs.sync_io);  // its block may be punched or zeroed
  if (rc == 0) rc = fs.meta.fallocate(ino, mode, off, len);
  if (rc == 0 && (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))) {
    // The metadata layer frees whole blocks only; zero the partial blocks
    // at the edges here.
    uint64_t end = off + len;
    uint64_t first_full = (off + 4095) / 4096 * 4096;
    uint64_t last_full = end / 4096 * 4096;
    if (first_full > last_full) {
      rc = zero_block_range(fs, ino, off, end);  // inside one block
    } else {
      if (off < first_full) rc = zero_block_range(fs, ino, off, first_full);
      if (rc == 0 && last_full < end) rc = zero_block_range(fs, ino, last_full, end);
    }
  }
  if (rc == 0) {
    // As ext4, xfs and tmpfs do: a successful fallocate changes mtime and
    // ctime.
    meta::SetAttrIn times;
    times.valid = meta::SetAttrIn::kMtimeNow;
    meta::InodeAttr out;
    rc = fs.meta.setattr(ino, times, &out);
  }
  fuse_reply_err(req, -rc);
}

void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info*) {
  if (whence != SEEK_DATA && whence != SEEK_HOLE) {
    fuse_reply_err(req, EINVAL);  // the kernel handles SEEK_SET/CUR/END itself
    return;
  }
  uint64_t result = 0;
  int rc = context(req).meta.seek(ino, static_cast<uint64_t>(off), whence, &result);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  fuse_reply_lseek(req, static_cast<off_t>(result));
}

}  // namespace

void add_space_ops(fuse_lowlevel_ops& ops, config::CacheMode cache) {
  ops.statfs = op_statfs;
  ops.fallocate = op_fallocate;
  // With fuse.cache=writeback the kernel asks without writing its dirty
  // pages back first, and this daemon would call them holes (past its size:
  // ENXIO): cp --sparse and tar --sparse would copy zeros for data. Left
  // out, the kernel answers from its own size (data up to the end, one
  // hole there), which is never wrong, only blind to holes.
  if (cache != config::CacheMode::kWriteback) ops.lseek = op_lseek;
}

}  // namespace peregrine::fs
