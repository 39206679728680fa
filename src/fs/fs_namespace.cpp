// Names: lookup (also of "." and ".." for file handles), mknod, mkdir,
// symlink, readlink, link, unlink, rmdir, rename. Inodes live in memory for
// the whole mount, so forget has nothing to release.
#include <cerrno>
#include <cstring>
#include <string>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  meta::InodeAttr a;
  meta::Metadata& meta = context(req).meta;
  int rc;
  // "." and "..": the kernel resolving a file handle (FUSE_EXPORT_SUPPORT)
  // whose inode it no longer caches; inode numbers are stable across mounts.
  if (std::strcmp(name, ".") == 0) {
    rc = meta.lookup_self(parent, &a);
  } else if (std::strcmp(name, "..") == 0) {
    rc = meta.lookup_parent(parent, &a);
  } else {
    rc = meta.lookup(parent, name, &a);
  }
  const FsContext& fs = context(req);
  if (rc == -ENOENT && fs.negative_timeout > 0) {
    // An entry with inode 0: the kernel keeps the name's absence for that
    // long, until a create, mknod, link or rename through it makes it.
    fuse_entry_param e{};
    e.entry_timeout = fs.negative_timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  reply_entry_or_error(req, rc, a);
}

void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  meta::InodeAttr a;
  int rc = context(req).meta.mknod(parent, name, mode, rdev, caller(req), &a);
  reply_entry_or_error(req, rc, a);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  meta::InodeAttr a;
  int rc = context(req).meta.mkdir(parent, name, mode, caller(req), &a);
  reply_entry_or_error(req, rc, a);
}

void op_symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  meta::InodeAttr a;
  int rc = context(req).meta.symlink(parent, name, target, caller(req), &a);
  reply_entry_or_error(req, rc, a);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  std::string target;
  int rc = context(req).meta.readlink(ino, &target);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  fuse_reply_readlink(req, target.c_str());
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  meta::InodeAttr a;
  int rc = context(req).meta.link(ino, newparent, newname, &a);
  reply_entry_or_error(req, rc, a);
}

// A name about to go may be a file's last, and a file with no name and no
// open handle is freed at once: not under an answered write of its bytes
// still in flight (write_behind.h).
void wait_for_writes_behind(FsContext& fs, fuse_ino_t parent, const char* name) {
  meta::InodeAttr a;
  if (!fs.write_behind.idle() && fs.meta.lookup(parent, name, &a) == 0) fs.write_behind.wait_file(a.ino, false);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FsContext& fs = context(req);
  wait_for_writes_behind(fs, parent, name);
  fuse_reply_err(req, -fs.meta.unlink(parent, name));
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_reply_err(req, -context(req).meta.rmdir(parent, name));
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
               unsigned int flags) {
  FsContext& fs = context(req);
  wait_for_writes_behind(fs, newparent, newname);  // the file a rename replaces
  // RENAME_WHITEOUT's whiteout is the caller's, as a mknod would make it.
  fuse_reply_err(req, -fs.meta.rename(parent, name, newparent, newname, flags, caller(req)));
}

}  // namespace

void add_namespace_ops(fuse_lowlevel_ops& ops) {
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.mknod = op_mknod;
  ops.mkdir = op_mkdir;
  ops.symlink = op_symlink;
  ops.readlink = op_readlink;
  ops.link = op_link;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.rename = op_rename;
}

}  // namespace peregrine::fs
