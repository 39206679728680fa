// Extended attributes, plus the root's read-only user.peregrine.stats,
// which carries the engine's per-drive statistics to `peregrine stats`,
// and its list of files open for writing (open_files_xattr.h).
// POSIX ACLs are xattrs too: the kernel enforces them, the metadata layer
// keeps them in step with the mode (meta/posix_acl.h).
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "fs_context.h"
#include "peregrine/meta/posix_acl.h"

namespace peregrine::fs {
namespace {

// The root's computed attributes: read-only, and never stored.
bool reserved_root_name(fuse_ino_t ino, const char* name) {
  uint64_t after = 0;
  return ino == FUSE_ROOT_ID && (std::strcmp(name, kStatsXattr) == 0 || open_files_page_name(name, &after));
}

// Linux knows these namespaces; a name outside them is EOPNOTSUPP, as on
// native filesystems. So are the ACL names on a mount without ACLs, as on
// ext4 mounted noacl.
bool supported_name(const FsContext& fs, const char* name) {
  if (meta::is_acl_xattr(name)) return fs.settings.fuse.acl;
  for (const char* prefix : {"user.", "trusted.", "security.", "system."}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

// What setting the access ACL takes from the mode besides its permission
// bits: S_ISGID unless the caller is in the file's group or holds
// CAP_FSETID (taken as uid 0), the VFS's rule (posix_acl_update_mode()).
// The kernel sends this as FUSE_SETXATTR_ACL_KILL_SGID only with the
// extended SETXATTR request, which libfuse 3.14 cannot read.
uint32_t acl_clear_mode(fuse_req_t req, FsContext& fs, fuse_ino_t ino, const char* name) {
  if (!fs.settings.fuse.acl || meta::kAclAccessXattr != name) return 0;
  meta::InodeAttr a;
  if (fs.meta.getattr(ino, &a) != 0 || (a.mode & S_ISGID) == 0) return 0;
  return caller_may_keep_sgid(caller_of(req), a.gid) ? 0 : S_ISGID;
}

// getxattr/listxattr protocol: size 0 asks for the length only; a buffer
// too small is ERANGE.
void reply_value(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (size < value.size()) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  FsContext& fs = context(req);
  if (ino == FUSE_ROOT_ID && std::strcmp(name, kStatsXattr) == 0) {
    reply_value(req, stats_json(fs), size);
    return;
  }
  if (uint64_t after = 0; ino == FUSE_ROOT_ID && open_files_page_name(name, &after)) {
    reply_value(req, open_files_page(fs, caller(req).uid, after), size);
    return;
  }
  if (!supported_name(fs, name)) {
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  std::string value;
  int rc = fs.meta.getxattr(ino, name, &value);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  reply_value(req, value, size);
}

void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  if (reserved_root_name(ino, name)) {
    fuse_reply_err(req, EPERM);  // reserved, computed on every read
    return;
  }
  FsContext& fs = context(req);
  if (!supported_name(fs, name)) {
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  const uint32_t clear_mode = acl_clear_mode(req, fs, ino, name);
  fuse_reply_err(req, -fs.meta.setxattr(ino, name, std::string_view(value, size), flags, clear_mode));
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  FsContext& fs = context(req);
  std::vector<std::string> names;
  int rc = fs.meta.listxattr(ino, &names);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  std::string packed;
  for (const std::string& n : names) {
    if (!supported_name(fs, n.c_str())) continue;  // ACLs kept from a mount with them
    packed += n;
    packed += '\0';
  }
  reply_value(req, packed, size);
}

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (reserved_root_name(ino, name)) {
    fuse_reply_err(req, EPERM);
    return;
  }
  FsContext& fs = context(req);
  if (!supported_name(fs, name)) {
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  fuse_reply_err(req, -fs.meta.removexattr(ino, name));
}

}  // namespace

void add_xattr_ops(fuse_lowlevel_ops& ops) {
  ops.getxattr = op_getxattr;
  ops.setxattr = op_setxattr;
  ops.listxattr = op_listxattr;
  ops.removexattr = op_removexattr;
}

}  // namespace peregrine::fs
