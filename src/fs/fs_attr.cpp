// getattr and setattr (chmod, chown, truncate, utimens), and the suid/sgid
// bits chown and truncate remove.
#include <cerrno>

#include "fs_context.h"
#include "transport/request_marks.h"

namespace peregrine::fs {
namespace {

int64_t ns_of(const timespec& ts) { return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

void reply_attr_or_error(fuse_req_t req, int rc, const meta::InodeAttr& a) {
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  const FsContext& fs = context(req);
  struct stat st;
  fill_stat(a, fs.preferred_io_bytes(), &st);
  patch_size(fs, a.ino, &st);
  fuse_reply_attr(req, &st, fs.attr_timeout);
}

// A SETATTR of times only, for an inode that no longer exists. With
// fuse.cache=writeback the kernel keeps a regular file's mtime/ctime itself
// and writes them back with such a SETATTR, also just after the file lost
// its last name (unlink, rename over it) when nothing had it open, so the
// inode was freed at once. Nothing is left to update, and the kernel
// ignores the attributes of that reply; an error, though, would be recorded
// against the whole filesystem and returned by the next syncfs(2). So it
// succeeds: a regular file with no links, the times asked for, and no
// caching of these attributes.
void reply_times_of_gone_inode(fuse_req_t req, fuse_ino_t ino, const struct stat* asked) {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = S_IFREG;
  st.st_nlink = 0;
  st.st_blksize = 4096;
  st.st_atim = asked->st_atim;
  st.st_mtim = asked->st_mtim;
  st.st_ctim = asked->st_ctim;
  fuse_reply_attr(req, &st, 0.0);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // With a writer's file handle: the kernel's write path refreshing size
  // and mode (refused_writebacks.h). A reader's (a read at the end of the
  // file, lseek) must not take the error the writer is to be told.
  if (fi != nullptr && fi->fh == kCountedWriteHandle) {
    if (int err = context(req).refused_writebacks.take(ino); err != 0) {
      fuse_reply_err(req, err);
      return;
    }
  }
  meta::InodeAttr a;
  int rc = context(req).meta.getattr(ino, &a);
  reply_attr_or_error(req, rc, a);
}

// Which suid/sgid bits this SETATTR takes from the file. Under
// FUSE_HANDLE_KILLPRIV_V2 the kernel sends no mode for them: a truncate by
// a caller without CAP_FSETID is marked; a chown(2) is not, and always
// takes them (the VFS's rule for root too); the kernel's file_remove_privs()
// (a cached write, fallocate) and chown(2) to -1, -1 come as a SETATTR
// naming no attribute. A SETATTR that sets the mode itself decides.
uint32_t suidgid_to_drop_in_setattr(fuse_req_t req, fuse_ino_t ino, int to_set) {
  const RequestMarks& marks = tls_request_marks;
  if (to_set & FUSE_SET_ATTR_MODE) return 0;
  const bool chown = (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) != 0;
  const bool truncate = marks.kill_suidgid && (to_set & FUSE_SET_ATTR_SIZE);
  if (!chown && !truncate && !marks.remove_privs) return 0;
  meta::InodeAttr a;
  if (context(req).meta.getattr(ino, &a) != 0) return 0;  // setattr reports it
  return suidgid_to_drop(caller_of(req), a, truncate);
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  FsContext& fs = context(req);
  meta::SetAttrIn in;
  in.clear_mode = suidgid_to_drop_in_setattr(req, ino, to_set);
  if (to_set & FUSE_SET_ATTR_MODE) {
    in.valid |= meta::SetAttrIn::kMode;
    in.mode = attr->st_mode & 07777;
  }
  if (to_set & FUSE_SET_ATTR_UID) {
    in.valid |= meta::SetAttrIn::kUid;
    in.uid = attr->st_uid;
  }
  if (to_set & FUSE_SET_ATTR_GID) {
    in.valid |= meta::SetAttrIn::kGid;
    in.gid = attr->st_gid;
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    in.valid |= meta::SetAttrIn::kAtimeNow;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    in.valid |= meta::SetAttrIn::kAtime;
    in.atime_ns = ns_of(attr->st_atim);
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    in.valid |= meta::SetAttrIn::kMtimeNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    in.valid |= meta::SetAttrIn::kMtime;
    in.mtime_ns = ns_of(attr->st_mtim);
  }
  if (to_set & FUSE_SET_ATTR_CTIME) {
    in.valid |= meta::SetAttrIn::kCtime;
    in.ctime_ns = ns_of(attr->st_ctim);
  }
  // Only the kernel's fuse_flush_times sends times alone with a handle.
  in.stamped_write_times = fi != nullptr && to_set == (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_CTIME);
  meta::InodeAttr out;
  if (!(to_set & FUSE_SET_ATTR_SIZE)) {
    int rc = fs.meta.setattr(ino, in, &out);
    if (rc == -ENOENT && !(to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
      reply_times_of_gone_inode(req, ino, attr);
      return;
    }
    reply_attr_or_error(req, rc, out);
    return;
  }
  // Truncate: no data IO may be in flight on this file while blocks are
  // freed, and the bytes past the new size in its last block must read as
  // zeros if the file grows again.
  in.valid |= meta::SetAttrIn::kSize;
  in.size = static_cast<uint64_t>(attr->st_size);
  ExclusiveGate gate(fs.gates, ino);
  int rc = fs.tails.write_back_and_drop(ino, fs.sync_io);  // its block may be freed or zeroed
  if (rc == 0) rc = fs.meta.setattr(ino, in, &out);
  if (rc == 0) rc = zero_block_tail(fs, ino, in.size);
  if (rc == 0) rc = fs.meta.getattr(ino, &out);
  reply_attr_or_error(req, rc, out);
}

}  // namespace

void add_attr_ops(fuse_lowlevel_ops& ops) {
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
}

}  // namespace peregrine::fs
