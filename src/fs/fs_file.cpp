// Open files: open, create (also O_TMPFILE), release, fsync. The
// page-cache policy is chosen here, per open: `direct` sends every read and
// write to the daemon; `writeback` (the default) lets the kernel cache,
// except for an O_DIRECT open, whose IO bypasses the cache (FOPEN_DIRECT_IO)
// and takes the engine's direct path at the direct mode's speed.
#include <fcntl.h>

#include <cerrno>

#include "fs_context.h"
#include "transport/fuse_wire.h"
#include "transport/request_marks.h"

namespace peregrine::fs {
namespace {

void count_write_handle(FsContext& fs, fuse_ino_t ino, fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) == O_RDONLY) return;
  fi->fh = kCountedWriteHandle;
  fs.write_open_files.opened(ino);
}

void uncount_write_handle(FsContext& fs, fuse_ino_t ino, const fuse_file_info* fi) {
  if (fi != nullptr && fi->fh == kCountedWriteHandle) fs.write_open_files.released(ino);
}

void set_cache_policy(FsContext& fs, fuse_file_info* fi) {
  // An O_DIRECT open of a cached mount: without FOPEN_DIRECT_IO the kernel
  // would send its IO one request at a time under the inode lock, through
  // the page cache's direct-IO path (a third of the direct mode's IOPS).
  // With it, the kernel writes back and drops the cached pages a direct
  // write overlaps before sending it, so cached opens of the same file stay
  // coherent (linux fs/fuse/file.c, fuse_direct_io; Documentation/
  // filesystems/fuse-io.rst).
  if (fs.settings.fuse.cache == config::CacheMode::kDirect || (fi->flags & O_DIRECT) != 0) {
    // The transport lets its writes run side by side on the file
    // (FsContext::parallel_direct_writes).
    fi->direct_io = 1;
  } else {
    fi->keep_cache = 1;
  }
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FsContext& fs = context(req);
  const bool kill_suidgid = tls_request_marks.kill_suidgid;
  meta::InodeAttr a;
  int rc = fs.meta.getattr(ino, &a);
  if (rc == 0 && S_ISDIR(a.mode)) rc = -EISDIR;
  if (rc == 0 && (fi->flags & O_TRUNC)) {
    // libfuse asks for atomic_o_trunc: the open truncates, with no SETATTR
    // after it, and an opener without CAP_FSETID (the kernel's mark) takes
    // the suid/sgid bits as a truncate(2) would, also of an empty file.
    // The size is read with the file's gate held exclusively: a writeback
    // answered before its IO (write_behind.h) holds the gate shared and
    // raises the size only when it lands, so a file whose first bytes are
    // still in flight has size 0 until then, and a truncate that saw 0 and
    // did nothing was undone by them (the kernel's later, shorter file then
    // kept their tail: seen by the crash loop's content check).
    ExclusiveGate gate(fs.gates, ino);
    rc = fs.meta.getattr(ino, &a);
    meta::SetAttrIn in;
    if (rc == 0 && a.size != 0) in.valid = meta::SetAttrIn::kSize;
    if (rc == 0 && kill_suidgid) in.clear_mode = suidgid_to_drop(caller_of(req), a, true);
    if (in.valid != 0 || in.clear_mode != 0) {
      if (in.valid != 0) rc = fs.tails.write_back_and_drop(ino, fs.sync_io);  // its block goes
      if (rc == 0) rc = fs.meta.setattr(ino, in, &a);
    }
    if (rc == 0 && in.clear_mode != 0) attributes_changed(fs, ino);
  }
  if (rc == 0) rc = fs.meta.open(ino);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  // With fuse.cache=writeback most reads are served from the page cache and
  // never reach the daemon, which keeps the access times (fs_read.cpp): an
  // open for reading counts as the access there, by the same rule.
  // An O_NOATIME open (the owner's or root's, which the kernel checked)
  // does not count: `peregrine sync` opens files that way to fsync them.
  if (fs.settings.fuse.cache == config::CacheMode::kWriteback && (fi->flags & O_ACCMODE) != O_WRONLY &&
      (fi->flags & O_NOATIME) == 0 && fs.meta.accessed(ino))
    attributes_changed(fs, ino);
  set_cache_policy(fs, fi);
  count_write_handle(fs, ino, fi);
  if (fuse_reply_open(req, fi) != 0) {  // the opener is gone
    uncount_write_handle(fs, ino, fi);
    fs.meta.release(ino);
  }
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  FsContext& fs = context(req);
  meta::InodeAttr a;
  // open(2) with O_TMPFILE: the transport turned FUSE_TMPFILE into this
  // (its name argument means nothing).
  int rc = tls_request_marks.tmpfile ? fs.meta.tmpfile(parent, mode, caller(req), &a)
                                     : fs.meta.create(parent, name, mode, caller(req), &a);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  set_cache_policy(fs, fi);
  count_write_handle(fs, a.ino, fi);
  fuse_entry_param e = make_entry(fs, a);
  if (fuse_reply_create(req, &e, fi) != 0) {
    uncount_write_handle(fs, a.ino, fi);
    fs.meta.release(a.ino);
  }
}

void op_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FsContext& fs = context(req);
  uncount_write_handle(fs, ino, fi);
  // A write that finds the volume full meanwhile waits for this release,
  // which may free an unlinked file's blocks.
  meta::Metadata::ComingRelease coming(fs.meta);
  // The last release of an unlinked file frees its blocks: not under an
  // answered write still in flight. A file with a name keeps them, and its
  // release need not wait (a worker waiting here serves nothing else).
  meta::InodeAttr a;
  if (!fs.write_behind.idle() && (fs.meta.getattr(ino, &a) != 0 || a.nlink == 0))
    fs.write_behind.wait_file(ino, false);
  // A refused writeback's error reached the writers' closes (the kernel
  // keeps it for the file): a writer that opens after the last of them
  // must not meet it again, though readers keep the file open. Not while a
  // writer remains: it is the one to be told.
  if (fi != nullptr && fi->fh == kCountedWriteHandle && !fs.write_open_files.is_open(ino))
    fs.refused_writebacks.forget(ino);
  const int rc = fs.meta.release(ino);
  fuse_reply_err(req, -rc);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  // Every write this file had answered has completed on the members. Flush
  // the members' caches (an overwrite in place changes no metadata that
  // would make the journal flush for us), then make the metadata durable
  // up to this file's last change (fdatasync: leaving out times alone).
  FsContext& fs = context(req);
  // The file's writebacks answered before their IO (write_behind.h) first:
  // their bytes, and the error any of them met. This thread holds no lock
  // and would only sleep: it completes their IO itself (reap).
  // A failed writeback is reported once, to the first fsync after it; but
  // while the file has writers, only to theirs: an fsync through a
  // read-only handle, such as `peregrine sync`'s, reports it and leaves it
  // for the writer, whose data it concerns. Only a writer's fsync counts as
  // the file's own (note_fsync).
  const bool writer = fi != nullptr && fi->fh == kCountedWriteHandle;
  if (writer && fs.write_behind.enabled()) fs.write_behind.note_fsync(ino);
  const bool takes_error = writer || !fs.write_open_files.is_open(ino);
  int rc = fs.write_behind.wait_file(ino, takes_error, true);
  if (rc == 0) rc = fs.tails.write_back(ino, fs.sync_io);
  if (rc == 0 && !fs.meta.planted_journal_without_data_flush()) rc = fs.sync_io.flush();
  if (rc == 0) rc = fs.meta.fsync(ino, datasync != 0);
  fuse_reply_err(req, -rc);
}

}  // namespace

void add_file_ops(fuse_lowlevel_ops& ops) {
  ops.open = op_open;
  ops.create = op_create;
  // No flush: writes are answered once on the drives, in a tail block that
  // reads see and the next commit writes back (tail_blocks.h), or held by
  // write-behind until fsync; and POSIX locks are the kernel's. Left out,
  // libfuse answers the first FLUSH with ENOSYS and the kernel sends no
  // more: one round trip less for every close(2).
  ops.release = op_release;
  ops.fsync = op_fsync;
}

}  // namespace peregrine::fs
