// Model: applying deltas, the fresh filesystem, and a canonical dump.
#include "peregrine/meta/model.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace peregrine::meta {

Model Model::make_fresh(int64_t now_ns) {
  Model m;
  auto root = std::make_unique<Inode>();
  root->attr.ino = kRootIno;
  root->attr.generation = 1;
  root->attr.mode = S_IFDIR | 0755;
  root->attr.nlink = 2;
  root->attr.atime_ns = root->attr.mtime_ns = root->attr.ctime_ns = now_ns;
  root->dir = std::make_unique<Directory>();
  root->parent = kRootIno;
  m.inodes.emplace(kRootIno, std::move(root));
  m.recount_body_bytes();
  return m;
}

uint64_t body_size::inode(const Inode& in) {
  uint64_t n = inode_base(in.dir != nullptr, in.symlink.size());
  for (const auto& [k, v] : in.xattrs) n += xattr(k.size(), v.size());
  n += in.extents.count() * kExtent;
  if (in.dir) {
    for (const auto& [name, ref] : in.dir->names()) n += dirent(name.size());
  }
  return n;
}

void Model::recount_body_bytes() {
  uint64_t n = body_size::kCounts + orphans.size() * body_size::kOrphan;
  for (const auto& [ino, in] : inodes) n += body_size::inode(*in);
  body_bytes = n;
}

Inode* Model::find(Ino ino) {
  auto it = inodes.find(ino);
  return it == inodes.end() ? nullptr : it->second.get();
}

const Inode* Model::find(Ino ino) const {
  auto it = inodes.find(ino);
  return it == inodes.end() ? nullptr : it->second.get();
}

int Model::apply(const Txn& txn, std::vector<VolRange>* freed) {
  for (const Delta& d : txn) {
    if (int rc = apply(d, freed); rc != 0) return rc;
  }
  return 0;
}

int Model::apply(const Delta& d, std::vector<VolRange>* freed) {
  switch (d.type) {
    case DeltaType::kInodePut: {
      if (d.attr.ino != d.ino || d.ino == 0) return -EUCLEAN;
      Inode* in = find(d.ino);
      if (in) {
        if ((in->attr.mode & S_IFMT) != (d.attr.mode & S_IFMT)) return -EUCLEAN;
        in->attr = d.attr;
        return 0;
      }
      auto node = std::make_unique<Inode>();
      node->attr = d.attr;
      if (node->is_dir()) node->dir = std::make_unique<Directory>();
      if (node->is_symlink()) node->symlink = d.name;
      body_bytes += body_size::inode_base(node->dir != nullptr, node->symlink.size());
      inodes.emplace(d.ino, std::move(node));
      next_ino = std::max(next_ino, d.ino + 1);
      return 0;
    }
    case DeltaType::kInodeDel: {
      auto it = inodes.find(d.ino);
      if (it == inodes.end() || d.ino == kRootIno) return -EUCLEAN;
      if (freed) {
        for (const auto& [off, e] : it->second->extents.extents()) freed->push_back({e.vol_off, e.len});
      }
      body_bytes -= body_size::inode(*it->second);
      inodes.erase(it);
      if (orphans.erase(d.ino) != 0) body_bytes -= body_size::kOrphan;
      return 0;
    }
    case DeltaType::kDirentPut: {
      Inode* p = find(d.ino);
      Inode* c = find(d.child);
      if (!p || !p->dir || !c || d.name.empty()) return -EUCLEAN;
      if (p->dir->remove(d.name)) body_bytes -= body_size::dirent(d.name.size());
      p->dir->add(d.name, d.child, d.a);
      body_bytes += body_size::dirent(d.name.size());
      c->parent = d.ino;
      return 0;
    }
    case DeltaType::kDirentDel: {
      Inode* p = find(d.ino);
      if (!p || !p->dir || !p->dir->remove(d.name)) return -EUCLEAN;
      body_bytes -= body_size::dirent(d.name.size());
      return 0;
    }
    case DeltaType::kXattrPut: {
      Inode* in = find(d.ino);
      if (!in) return -EUCLEAN;
      auto [it, added] = in->xattrs.try_emplace(d.name);
      body_bytes += added ? body_size::xattr(d.name.size(), d.value.size()) : d.value.size() - it->second.size();
      it->second = d.value;
      return 0;
    }
    case DeltaType::kXattrDel: {
      Inode* in = find(d.ino);
      if (!in) return -EUCLEAN;
      auto it = in->xattrs.find(d.name);
      if (it == in->xattrs.end()) return -EUCLEAN;
      body_bytes -= body_size::xattr(it->first.size(), it->second.size());
      in->xattrs.erase(it);
      return 0;
    }
    case DeltaType::kExtentMap: {
      Inode* in = find(d.ino);
      if (!in || !in->is_reg()) return -EUCLEAN;
      const size_t before = in->extents.count();
      in->extents.insert(d.a, d.b, d.c, d.written, freed);
      body_bytes += (in->extents.count() - before) * body_size::kExtent;
      return 0;
    }
    case DeltaType::kExtentUnmap: {
      Inode* in = find(d.ino);
      if (!in || !in->is_reg()) return -EUCLEAN;
      const size_t before = in->extents.count();
      in->extents.remove(d.a, d.c, freed);
      body_bytes += (in->extents.count() - before) * body_size::kExtent;
      return 0;
    }
    case DeltaType::kExtentWritten: {
      Inode* in = find(d.ino);
      if (!in || !in->is_reg()) return -EUCLEAN;
      const size_t before = in->extents.count();
      in->extents.mark_written(d.a, d.b, d.c);
      body_bytes += (in->extents.count() - before) * body_size::kExtent;
      return 0;
    }
    case DeltaType::kOrphanAdd:
      if (!find(d.ino)) return -EUCLEAN;
      if (orphans.insert(d.ino).second) body_bytes += body_size::kOrphan;
      return 0;
    case DeltaType::kOrphanDel:
      if (orphans.erase(d.ino) != 0) body_bytes -= body_size::kOrphan;
      return 0;
  }
  return -EUCLEAN;
}

std::vector<Ino> Model::sorted_inos() const {
  std::vector<Ino> v;
  v.reserve(inodes.size());
  for (const auto& [ino, _] : inodes) v.push_back(ino);
  std::sort(v.begin(), v.end());
  return v;
}

std::string Model::dump() const {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "next_ino %llu\n", static_cast<unsigned long long>(next_ino));
  s += buf;
  for (Ino o : orphans) s += "orphan " + std::to_string(o) + "\n";
  for (Ino ino : sorted_inos()) {
    const Inode& in = *find(ino);
    const InodeAttr& a = in.attr;
    std::snprintf(buf, sizeof buf,
                  "ino %llu gen %llu mode %o uid %u gid %u nlink %u size %llu rdev %llu a %lld m %lld c %lld\n",
                  (unsigned long long)a.ino, (unsigned long long)a.generation, a.mode, a.uid, a.gid, a.nlink,
                  (unsigned long long)a.size, (unsigned long long)a.rdev, (long long)a.atime_ns, (long long)a.mtime_ns,
                  (long long)a.ctime_ns);
    s += buf;
    if (in.is_symlink()) s += "  target " + in.symlink + "\n";
    for (const auto& [k, v] : in.xattrs) s += "  xattr " + k + "=" + v + "\n";
    for (const auto& [off, e] : in.extents.extents()) {
      std::snprintf(buf, sizeof buf, "  extent %llu +%llu -> %llu %s\n", (unsigned long long)off,
                    (unsigned long long)e.len, (unsigned long long)e.vol_off, e.written ? "w" : "u");
      s += buf;
    }
    if (in.dir) {
      for (auto it = in.dir->after(0); it != in.dir->end(); ++it) {
        s += "  entry " + std::to_string(it->first) + " " + it->second->first + " -> " +
             std::to_string(it->second->second.ino) + "\n";
      }
    }
  }
  return s;
}

}  // namespace peregrine::meta
