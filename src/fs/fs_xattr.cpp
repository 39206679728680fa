// Extended attributes, plus the root's read-only user.peregrine.stats,
// which carries the engine's per-drive statistics to `peregrine stats`.
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

// Linux knows these namespaces; a name outside them is EOPNOTSUPP, as on
// native filesystems.
bool known_namespace(const char* name) {
  for (const char* prefix : {"user.", "trusted.", "security.", "system."}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
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
  if (!known_namespace(name)) {
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
  if (ino == FUSE_ROOT_ID && std::strcmp(name, kStatsXattr) == 0) {
    fuse_reply_err(req, EPERM);  // reserved, computed on every read
    return;
  }
  if (!known_namespace(name)) {
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  fuse_reply_err(req, -context(req).meta.setxattr(ino, name, std::string_view(value, size), flags));
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  std::vector<std::string> names;
  int rc = context(req).meta.listxattr(ino, &names);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  std::string packed;
  for (const std::string& n : names) {
    packed += n;
    packed += '\0';
  }
  reply_value(req, packed, size);
}

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (ino == FUSE_ROOT_ID && std::strcmp(name, kStatsXattr) == 0) {
    fuse_reply_err(req, EPERM);
    return;
  }
  if (!known_namespace(name)) {
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  fuse_reply_err(req, -context(req).meta.removexattr(ino, name));
}

}  // namespace

void add_xattr_ops(fuse_lowlevel_ops& ops) {
  ops.getxattr = op_getxattr;
  ops.setxattr = op_setxattr;
  ops.listxattr = op_listxattr;
  ops.removexattr = op_removexattr;
}

}  // namespace peregrine::fs
