// Metadata: namespace operations (lookup, create, link, unlink, rename,
// setattr, readdir, xattrs, statfs, open/release).
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <optional>

#include "peregrine/meta/metadata.h"
#include "peregrine/meta/model_paths.h"
#include "peregrine/meta/posix_acl.h"
#include "txn_builder.h"

namespace peregrine::meta {

namespace {
constexpr uint32_t kLinkMax = 65000;

// A new inode's mode and the ACL xattrs it is created with, from its
// parent's default ACL or, without one, the umask (posix_acl_create()).
struct NewInodeAccess {
  uint32_t mode = 0;
  std::vector<std::pair<std::string_view, std::string>> xattrs;
};

NewInodeAccess new_inode_access(const Inode& parent, uint32_t mode, const Cred& cred, bool posix_acl) {
  NewInodeAccess out{mode, {}};
  if (S_ISLNK(mode)) return out;  // symlinks have neither umask nor ACLs
  std::optional<PosixAcl> inherited;
  if (posix_acl) {
    auto it = parent.xattrs.find(kAclDefaultXattr);
    if (it != parent.xattrs.end()) inherited = PosixAcl::decode(it->second);
  }
  if (!inherited) {
    out.mode &= ~(cred.umask & 0777);
    return out;
  }
  if (S_ISDIR(mode)) out.xattrs.emplace_back(kAclDefaultXattr, inherited->encode());
  if (inherited->create_masq(&out.mode)) out.xattrs.emplace_back(kAclAccessXattr, inherited->encode());
  return out;
}

// A new inode's number, owner and times; the group of a setgid parent.
InodeAttr fresh_attr(Ino ino, uint32_t mode, const Inode& parent, const Cred& cred, int64_t t) {
  InodeAttr a;
  a.ino = ino;
  a.generation = 1;
  a.mode = mode;
  a.uid = cred.uid;
  a.gid = (parent.attr.mode & S_ISGID) ? parent.attr.gid : cred.gid;
  a.atime_ns = a.mtime_ns = a.ctime_ns = t;
  return a;
}

int check_name(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    return -EINVAL;
  if (name.size() > kNameMax) return -ENAMETOOLONG;
  return 0;
}
}  // namespace

int Metadata::lookup(Ino parent, std::string_view name, InodeAttr* out) {
  if (name.size() > kNameMax) return -ENAMETOOLONG;
  ReaderLock lk(ns_mu_);
  const Inode* p = model_.find(parent);
  if (!p) return -ENOENT;
  if (!p->dir) return -ENOTDIR;
  const DirEntryRef* e = p->dir->find(name);
  if (!e) return -ENOENT;
  const Inode* c = model_.find(e->ino);
  if (!c) return -EIO;
  *out = attr_of(*c);
  return 0;
}

int Metadata::getattr(Ino ino, InodeAttr* out) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  *out = attr_of(*in);
  return 0;
}

int Metadata::lookup_self(Ino ino, InodeAttr* out) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in || in->attr.nlink == 0) return -ENOENT;
  *out = attr_of(*in);
  return 0;
}

int Metadata::lookup_parent(Ino dir, InodeAttr* out) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(dir);
  if (!in || in->attr.nlink == 0) return -ENOENT;
  if (!in->dir) return -ENOTDIR;
  const Inode* p = model_.find(in->parent);
  if (!p) return -EIO;
  *out = attr_of(*p);
  return 0;
}

std::map<Ino, std::string> Metadata::paths_of(const std::set<Ino>& inos) {
  ReaderLock lk(ns_mu_);
  return meta::paths_of(model_, inos);
}

int Metadata::create_node(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev, std::string_view target,
                          const Cred& cred, bool open_it, InodeAttr* out) {
  if (opt_.read_only) return -EROFS;
  // An empty name: an O_TMPFILE inode (tmpfile()), which has none.
  const bool unnamed = name.empty();
  if (!unnamed) {
    if (int rc = check_name(name); rc != 0) return rc;
  }
  WriterLock lk(ns_mu_);
  Inode* p = model_.find(parent);
  if (!p) return -ENOENT;
  if (!p->dir) return -ENOTDIR;
  if (p->attr.nlink == 0) return -ENOENT;  // removed directory still open
  if (!unnamed && p->dir->find(name)) return -EEXIST;
  const bool is_dir = S_ISDIR(mode);
  NewInodeAccess access = new_inode_access(*p, mode, cred, opt_.posix_acl);
  uint64_t growth = body_size::inode_base(is_dir, target.size()) + body_size::dirent(name.size());
  for (const auto& [k, v] : access.xattrs) growth += body_size::xattr(k.size(), v.size());
  if (!space_locked().fits_new(growth)) return -ENOSPC;
  if (is_dir && p->attr.nlink >= kLinkMax) return -EMLINK;
  const int64_t t = now();
  InodeAttr a = fresh_attr(model_.next_ino, access.mode, *p, cred, t);
  if ((p->attr.mode & S_ISGID) && is_dir) a.mode |= S_ISGID;
  a.nlink = unnamed ? 0 : is_dir ? 2 : 1;
  a.rdev = rdev;
  a.size = S_ISLNK(mode) ? target.size() : 0;
  TxnBuilder b;
  b.add(inode_put(a, target));
  for (auto& [k, v] : access.xattrs) b.add(xattr_put(a.ino, k, std::move(v)));
  if (unnamed) {
    // Journaled with the inode: a crash can never leave it without being
    // on the orphan list, so the next mount frees it.
    b.orphan_adds.push_back(a.ino);
  } else {
    b.put_dirent(parent, a.ino, p->dir->next_cookie(), name);
    InodeAttr& pa = b.attr(p);
    pa.mtime_ns = pa.ctime_ns = t;
    if (is_dir) ++pa.nlink;
  }
  if (int rc = commit_txn(b.finish()); rc != 0) return rc;
  Inode* c = model_.find(a.ino);
  if (open_it) ++c->open_count;
  c->linkable = unnamed;
  *out = attr_of(*c);
  return 0;
}

int Metadata::mknod(Ino parent, std::string_view name, uint32_t mode, uint64_t rdev, const Cred& cred, InodeAttr* out) {
  uint32_t type = mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  switch (type) {
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK: rdev = 0; break;
    case S_IFCHR:
    case S_IFBLK: break;
    default: return -EINVAL;
  }
  return create_node(parent, name, type | (mode & 07777), rdev, {}, cred, false, out);
}

int Metadata::create(Ino parent, std::string_view name, uint32_t mode, const Cred& cred, InodeAttr* out) {
  return create_node(parent, name, S_IFREG | (mode & 07777), 0, {}, cred, true, out);
}

int Metadata::tmpfile(Ino parent, uint32_t mode, const Cred& cred, InodeAttr* out) {
  return create_node(parent, {}, S_IFREG | (mode & 07777), 0, {}, cred, true, out);
}

int Metadata::mkdir(Ino parent, std::string_view name, uint32_t mode, const Cred& cred, InodeAttr* out) {
  return create_node(parent, name, S_IFDIR | (mode & 07777), 0, {}, cred, false, out);
}

int Metadata::symlink(Ino parent, std::string_view name, std::string_view target, const Cred& cred, InodeAttr* out) {
  if (target.empty()) return -ENOENT;
  if (target.size() > kSymlinkMax) return -ENAMETOOLONG;
  return create_node(parent, name, S_IFLNK | 0777, 0, target, cred, false, out);
}

int Metadata::readlink(Ino ino, std::string* target) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (!in->is_symlink()) return -EINVAL;
  *target = in->symlink;
  return 0;
}

int Metadata::link(Ino ino, Ino newparent, std::string_view newname, InodeAttr* out) {
  if (opt_.read_only) return -EROFS;
  if (int rc = check_name(newname); rc != 0) return rc;
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  Inode* p = model_.find(newparent);
  if (!in || !p) return -ENOENT;
  if (in->is_dir()) return -EPERM;
  if (!p->dir) return -ENOTDIR;
  if (p->attr.nlink == 0) return -ENOENT;
  // A file without links can get one only if it never had one (O_TMPFILE;
  // the kernel refuses O_TMPFILE|O_EXCL files itself).
  const bool orphan = in->attr.nlink == 0;
  if (orphan && !in->linkable) return -ENOENT;
  if (in->attr.nlink >= kLinkMax) return -EMLINK;
  if (p->dir->find(newname)) return -EEXIST;
  if (!space_locked().fits_new(body_size::dirent(newname.size()))) return -ENOSPC;
  const int64_t t = now();
  TxnBuilder b;
  b.put_dirent(newparent, ino, p->dir->next_cookie(), newname);
  if (orphan) {
    Delta d;
    d.type = DeltaType::kOrphanDel;
    d.ino = ino;
    b.add(d);
  }
  InodeAttr& a = b.attr(in);
  ++a.nlink;
  a.ctime_ns = t;
  InodeAttr& pa = b.attr(p);
  pa.mtime_ns = pa.ctime_ns = t;
  if (int rc = commit_txn(b.finish()); rc != 0) return rc;
  in->linkable = false;
  *out = attr_of(*in);
  return 0;
}

// One name of `in` is going away: drop a link (all for a directory); at
// zero the inode is deleted, or becomes an orphan while it is open.
void Metadata::drop_link(TxnBuilder& b, Inode* in) {
  InodeAttr& a = b.attr(in);
  a.nlink = in->is_dir() || a.nlink == 0 ? 0 : a.nlink - 1;
  a.ctime_ns = now();
  if (a.nlink == 0) {
    if (in->open_count > 0) {
      b.orphan_adds.push_back(in->attr.ino);
    } else {
      b.dels.insert(in->attr.ino);
    }
  }
}

int Metadata::unlink(Ino parent, std::string_view name) {
  if (opt_.read_only) return -EROFS;
  if (name.size() > kNameMax) return -ENAMETOOLONG;
  WriterLock lk(ns_mu_);
  Inode* p = model_.find(parent);
  if (!p) return -ENOENT;
  if (!p->dir) return -ENOTDIR;
  const DirEntryRef* e = p->dir->find(name);
  if (!e) return -ENOENT;
  Inode* c = model_.find(e->ino);
  if (!c) return -EIO;
  if (c->is_dir()) return -EISDIR;
  TxnBuilder b;
  b.del_dirent(parent, name);
  InodeAttr& pa = b.attr(p);
  pa.mtime_ns = pa.ctime_ns = now();
  drop_link(b, c);
  return commit_txn(b.finish());
}

int Metadata::rmdir(Ino parent, std::string_view name) {
  if (opt_.read_only) return -EROFS;
  if (name == ".") return -EINVAL;
  if (name == "..") return -ENOTEMPTY;
  if (name.size() > kNameMax) return -ENAMETOOLONG;
  WriterLock lk(ns_mu_);
  Inode* p = model_.find(parent);
  if (!p) return -ENOENT;
  if (!p->dir) return -ENOTDIR;
  const DirEntryRef* e = p->dir->find(name);
  if (!e) return -ENOENT;
  Inode* c = model_.find(e->ino);
  if (!c) return -EIO;
  if (!c->is_dir()) return -ENOTDIR;
  if (c->attr.ino == kRootIno) return -EBUSY;
  if (!c->dir->empty()) return -ENOTEMPTY;
  TxnBuilder b;
  b.del_dirent(parent, name);
  InodeAttr& pa = b.attr(p);
  pa.mtime_ns = pa.ctime_ns = now();
  --pa.nlink;
  drop_link(b, c);
  return commit_txn(b.finish());
}

// True when `ino` is `maybe_ancestor` or lies below it.
bool Metadata::is_ancestor(Ino maybe_ancestor, Ino ino) const {
  for (;;) {
    if (ino == maybe_ancestor) return true;
    if (ino == kRootIno) return false;
    const Inode* in = model_.find(ino);
    if (!in || in->parent == 0 || in->parent == ino) return false;
    ino = in->parent;
  }
}

int Metadata::rename(Ino parent, std::string_view name, Ino newparent, std::string_view newname, uint32_t flags,
                     const Cred& cred) {
  if (opt_.read_only) return -EROFS;
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return -EINVAL;
  if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))) return -EINVAL;
  if (name.size() > kNameMax) return -ENAMETOOLONG;
  if (int rc = check_name(newname); rc != 0) return rc;
  if (name.empty() || name == "." || name == "..") return -EINVAL;
  WriterLock lk(ns_mu_);
  Inode* p = model_.find(parent);
  Inode* np = model_.find(newparent);
  if (!p || !np) return -ENOENT;
  if (!p->dir || !np->dir) return -ENOTDIR;
  const DirEntryRef* se = p->dir->find(name);
  if (!se) return -ENOENT;
  const DirEntryRef src = *se;
  const DirEntryRef* de = np->dir->find(newname);
  const bool has_dst = de != nullptr;
  const DirEntryRef dst = has_dst ? *de : DirEntryRef{};
  Inode* s = model_.find(src.ino);
  Inode* d = has_dst ? model_.find(dst.ino) : nullptr;
  if (!s || (has_dst && !d)) return -EIO;
  // Only a move to a new, longer name grows the checkpoint; with a
  // whiteout the old entry stays (for it), so a new name is a whole entry.
  uint64_t growth = 0;
  if (flags & RENAME_WHITEOUT) {
    growth = body_size::inode_base(false, 0) + (has_dst ? 0 : body_size::dirent(newname.size()));
  } else if (!has_dst && newname.size() > name.size()) {
    growth = newname.size() - name.size();
  }
  if (growth > 0 && !space_locked().fits_new(growth)) return -ENOSPC;
  const int64_t t = now();
  TxnBuilder b;
  if (flags & RENAME_EXCHANGE) {
    if (!has_dst) return -ENOENT;
    if (src.ino == dst.ino) return 0;
    if (s->is_dir() && is_ancestor(src.ino, newparent)) return -EINVAL;
    if (d->is_dir() && is_ancestor(dst.ino, parent)) return -EINVAL;
    b.put_dirent(parent, dst.ino, src.cookie, name);
    b.put_dirent(newparent, src.ino, dst.cookie, newname);
    if (parent != newparent && s->is_dir() != d->is_dir()) {
      // The directory among the two changes parent: move one ".." link.
      InodeAttr& pa = b.attr(p);
      InodeAttr& npa = b.attr(np);
      if (s->is_dir()) {
        --pa.nlink;
        ++npa.nlink;
      } else {
        ++pa.nlink;
        --npa.nlink;
      }
    }
    b.attr(s).ctime_ns = t;
    b.attr(d).ctime_ns = t;
  } else {
    if (has_dst && (flags & RENAME_NOREPLACE)) return -EEXIST;
    if (has_dst && src.ino == dst.ino) return 0;
    if (s->is_dir() && is_ancestor(src.ino, newparent)) return -EINVAL;
    if (has_dst) {
      if (s->is_dir()) {
        if (!d->is_dir()) return -ENOTDIR;
        if (!d->dir->empty()) return -ENOTEMPTY;
      } else if (d->is_dir()) {
        return -EISDIR;
      }
      // A non-directory replacing a directory that is our ancestor cannot
      // happen (ancestors are never empty of us).
    }
    if (s->is_dir() && !has_dst && np->attr.nlink >= kLinkMax && parent != newparent) return -EMLINK;
    b.put_dirent(newparent, src.ino, np->dir->next_cookie(), newname);
    if (flags & RENAME_WHITEOUT) {
      // overlayfs' upper layer: the old name becomes a whiteout, a 0:0
      // character device with no permissions, in the same transaction (as
      // ext4_whiteout_for_rename; the kernel checked CAP_MKNOD). It takes
      // the moved entry's cookie, which the new name does not use.
      InodeAttr w = fresh_attr(model_.next_ino, S_IFCHR, *p, cred, t);
      w.nlink = 1;
      b.add(inode_put(w, {}));
      b.put_dirent(parent, w.ino, src.cookie, name);
    } else {
      b.del_dirent(parent, name);
    }
    if (has_dst) {
      drop_link(b, d);
      if (d->is_dir()) --b.attr(np).nlink;  // its ".." is gone
    }
    if (s->is_dir() && parent != newparent) {
      --b.attr(p).nlink;
      ++b.attr(np).nlink;
    }
    b.attr(s).ctime_ns = t;
  }
  InodeAttr& pa = b.attr(p);
  pa.mtime_ns = pa.ctime_ns = t;
  InodeAttr& npa = b.attr(np);
  npa.mtime_ns = npa.ctime_ns = t;
  return commit_txn(b.finish());
}

int Metadata::setattr(Ino ino, const SetAttrIn& in, InodeAttr* out) {
  if (opt_.read_only) return -EROFS;
  WriterLock lk(ns_mu_);
  Inode* node = model_.find(ino);
  if (!node) return -ENOENT;
  const int64_t t = now();
  if (in.stamped_write_times && in.valid == (SetAttrIn::kMtime | SetAttrIn::kCtime) && in.clear_mode == 0 &&
      node->is_reg() && logged_recently(*node, t)) {
    // As a rewrite's times (defer_rewrite_times): journaling them cost
    // an fdatasync'ing database a journal commit and a flush each time
    // the kernel's clock ticked between its writes.
    node->attr.mtime_ns = in.mtime_ns;
    node->attr.ctime_ns = in.ctime_ns;
    mark_times_unlogged(node);
    *out = attr_of(*node);
    return 0;
  }
  TxnBuilder b;
  InodeAttr& a = b.attr(node);
  // A size grown over a last block whose tail a shrink zeroed in place
  // (zero_block_tail, after its record) must not be durable before those
  // zeros: else a crash could show the bytes from before the shrink. The
  // batch flushes first, as for a write that grows the file.
  const bool grows = (in.valid & SetAttrIn::kSize) && in.size > a.size;
  if (in.valid & SetAttrIn::kSize) {
    if (node->is_dir()) return -EISDIR;
    if (!node->is_reg()) return -EINVAL;
    if (in.size > (uint64_t{1} << 60)) return -EFBIG;
    const uint64_t keep = (in.size + kBlockSize - 1) / kBlockSize * kBlockSize;
    const auto& ext = node->extents.extents();
    if (!ext.empty()) {
      const uint64_t end = std::prev(ext.end())->first + std::prev(ext.end())->second.len;
      if (end > keep) {
        Delta d;
        d.type = DeltaType::kExtentUnmap;
        d.ino = ino;
        d.a = keep;
        d.c = end - keep;
        b.add(d);
      }
    }
    a.size = in.size;
    a.mtime_ns = t;
  }
  if (in.valid & SetAttrIn::kMode) {
    a.mode = (a.mode & S_IFMT) | (in.mode & 07777);
    // The access ACL follows the mode (ext4: posix_acl_chmod), also on a
    // mount without ACLs, so that they still agree when ACLs are back.
    auto it = node->xattrs.find(kAclAccessXattr);
    std::optional<PosixAcl> acl = it != node->xattrs.end() ? PosixAcl::decode(it->second) : std::nullopt;
    if (acl) {
      acl->chmod(a.mode);
      b.add(xattr_put(ino, kAclAccessXattr, acl->encode()));  // the same size: no space check
    }
  }
  a.mode &= ~(in.clear_mode & (S_ISUID | S_ISGID));
  if (in.valid & SetAttrIn::kUid) a.uid = in.uid;
  if (in.valid & SetAttrIn::kGid) a.gid = in.gid;
  if (in.valid & SetAttrIn::kAtimeNow)
    a.atime_ns = t;
  else if (in.valid & SetAttrIn::kAtime)
    a.atime_ns = in.atime_ns;
  if (in.valid & SetAttrIn::kMtimeNow)
    a.mtime_ns = t;
  else if (in.valid & SetAttrIn::kMtime)
    a.mtime_ns = in.mtime_ns;
  a.ctime_ns = (in.valid & SetAttrIn::kCtime) ? in.ctime_ns : t;
  if (int rc = commit_txn(b.finish(), grows); rc != 0) return rc;
  *out = attr_of(*node);
  return 0;
}

int Metadata::listing_end(Ino ino, uint64_t* end) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (!in->dir) return -ENOTDIR;
  *end = in->dir->next_cookie();
  return 0;
}

int Metadata::readdir(Ino ino, uint64_t cookie, size_t max, std::vector<DirEntry>* out, uint64_t end) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (!in->dir) return -ENOTDIR;
  for (auto it = in->dir->after(cookie); it != in->dir->end() && it->first < end && out->size() < max; ++it) {
    const Inode* c = model_.find(it->second->second.ino);
    out->push_back({it->second->first, it->second->second.ino, c ? (c->attr.mode & S_IFMT) : 0, it->first});
  }
  return 0;
}

int Metadata::readdir_plus(Ino ino, uint64_t cookie, size_t max, std::vector<std::pair<DirEntry, InodeAttr>>* out,
                           uint64_t end) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (!in->dir) return -ENOTDIR;
  for (auto it = in->dir->after(cookie); it != in->dir->end() && it->first < end && out->size() < max; ++it) {
    const Inode* c = model_.find(it->second->second.ino);
    if (!c) return -EIO;
    out->push_back(
        {DirEntry{it->second->first, it->second->second.ino, c->attr.mode & S_IFMT, it->first}, attr_of(*c)});
  }
  return 0;
}

int Metadata::getxattr(Ino ino, std::string_view name, std::string* value) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  auto it = in->xattrs.find(name);
  if (it == in->xattrs.end()) return -ENODATA;
  *value = it->second;
  return 0;
}

int Metadata::setxattr(Ino ino, std::string_view name, std::string_view value, int flags, uint32_t clear_mode) {
  if (opt_.read_only) return -EROFS;
  if (name.empty()) return -EINVAL;
  if (name.size() > kXattrNameMax) return -ERANGE;
  if (value.size() > kXattrValueMax) return -E2BIG;
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return -EINVAL;
  std::optional<PosixAcl> acl;
  if (opt_.posix_acl && is_acl_xattr(name)) {
    acl = PosixAcl::decode(value);
    if (!acl) return -EINVAL;
  }
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  auto old = in->xattrs.find(name);
  const bool exists = old != in->xattrs.end();
  if ((flags & XATTR_CREATE) && exists) return -EEXIST;
  if ((flags & XATTR_REPLACE) && !exists) return -ENODATA;
  TxnBuilder b;
  InodeAttr& a = b.attr(in);
  bool store = true;
  if (acl && name == kAclAccessXattr) {
    // The mode shows what the ACL grants; an ACL the mode says all of is
    // not kept (ext4: posix_acl_update_mode).
    store = acl->extends_mode(&a.mode);
    a.mode &= ~(clear_mode & S_ISGID);
  }
  if (store) {
    const uint64_t growth = !exists                             ? body_size::xattr(name.size(), value.size())
                            : value.size() > old->second.size() ? value.size() - old->second.size()
                                                                : 0;
    if (growth > 0 && !space_locked().fits_new(growth)) return -ENOSPC;
    b.add(xattr_put(ino, name, std::string(value)));
  } else if (exists) {
    b.add(xattr_del(ino, name));
  }
  a.ctime_ns = now();
  return commit_txn(b.finish());
}

int Metadata::listxattr(Ino ino, std::vector<std::string>* names) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  for (const auto& [k, v] : in->xattrs) names->push_back(k);
  return 0;
}

int Metadata::removexattr(Ino ino, std::string_view name) {
  if (opt_.read_only) return -EROFS;
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (!in->xattrs.contains(name)) {
    // The kernel removes an ACL to say "none" (setfacl -k, -b), whether
    // there is one or not; ext4 answers 0.
    return opt_.posix_acl && is_acl_xattr(name) ? 0 : -ENODATA;
  }
  TxnBuilder b;
  b.add(xattr_del(ino, name));
  b.attr(in).ctime_ns = now();
  return commit_txn(b.finish());
}

int Metadata::statfs(StatFs* out) {
  ReaderLock lk(ns_mu_);
  out->total_blocks = alloc_->total_bytes() / kBlockSize;
  out->free_blocks = alloc_->free_bytes() / kBlockSize;
  // Free space that no extent could be recorded for cannot be written.
  const MetaSpace sp = space_locked();
  out->avail_blocks = sp.fits_allocation(kExtentDeltaGrowth) ? out->free_blocks : 0;
  out->files_free = sp.files_free();
  out->files = sp.inodes + out->files_free;
  return 0;
}

int Metadata::open(Ino ino) {
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  ++in->open_count;
  return 0;
}

Metadata::ComingRelease::ComingRelease(Metadata& md) : md_(md) {
  MutexLock lock(md_.releases_mu_);
  ++md_.coming_releases_;
}

Metadata::ComingRelease::~ComingRelease() {
  MutexLock lock(md_.releases_mu_);
  if (--md_.coming_releases_ == 0) md_.releases_done_.notify_all();
}

uint64_t Metadata::release_waits() const {
  MutexLock lock(releases_mu_);
  return release_waits_;
}

int Metadata::release(Ino ino, bool* last) {
  if (last) *last = false;
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (!in) return -ENOENT;
  if (in->open_count > 0) --in->open_count;
  if (in->open_count > 0) return 0;
  if (last) *last = true;
  alloc_->drop_reservation(ino);
  if (in->attr.nlink == 0 && ino != kRootIno) {
    Delta d;
    d.type = DeltaType::kInodeDel;
    d.ino = ino;
    return commit_txn(Txn{d});
  }
  return 0;
}

}  // namespace peregrine::meta
