// Metadata::TxnBuilder: collects the deltas of one operation. Attribute
// changes are staged on copies (the Model is untouched until commit_txn
// applies the finished transaction), then emitted in a fixed order:
// structural deltas, staged attribute puts, orphan adds, inode deletes.
// Thread rules: used only under Metadata's exclusive namespace lock.
#pragma once

#include <map>
#include <set>

#include "peregrine/meta/metadata.h"

namespace peregrine::meta {

struct Metadata::TxnBuilder {
  Txn txn;
  std::map<Ino, InodeAttr> staged;
  std::vector<Ino> orphan_adds;
  std::set<Ino> dels;

  InodeAttr& attr(const Inode* in) { return staged.try_emplace(in->attr.ino, in->attr).first->second; }
  void add(Delta d) { txn.push_back(std::move(d)); }
  void put_dirent(Ino parent, Ino child, uint64_t cookie, std::string_view name) {
    Delta d;
    d.type = DeltaType::kDirentPut;
    d.ino = parent;
    d.child = child;
    d.a = cookie;
    d.name = std::string(name);
    add(std::move(d));
  }
  void del_dirent(Ino parent, std::string_view name) {
    Delta d;
    d.type = DeltaType::kDirentDel;
    d.ino = parent;
    d.name = std::string(name);
    add(std::move(d));
  }
  Txn finish() {
    for (auto& [ino, a] : staged) {
      if (dels.count(ino)) continue;
      Delta d;
      d.type = DeltaType::kInodePut;
      d.ino = ino;
      d.attr = a;
      txn.push_back(std::move(d));
    }
    for (Ino o : orphan_adds) {
      Delta d;
      d.type = DeltaType::kOrphanAdd;
      d.ino = o;
      txn.push_back(std::move(d));
    }
    for (Ino o : dels) {
      Delta d;
      d.type = DeltaType::kInodeDel;
      d.ino = o;
      txn.push_back(std::move(d));
    }
    return std::move(txn);
  }
};

inline Delta inode_put(const InodeAttr& a, std::string_view target = {}) {
  Delta d;
  d.type = DeltaType::kInodePut;
  d.ino = a.ino;
  d.attr = a;
  d.name = std::string(target);
  return d;
}

inline Delta xattr_put(Ino ino, std::string_view name, std::string value) {
  Delta d;
  d.type = DeltaType::kXattrPut;
  d.ino = ino;
  d.name = std::string(name);
  d.value = std::move(value);
  return d;
}

inline Delta xattr_del(Ino ino, std::string_view name) {
  Delta d;
  d.type = DeltaType::kXattrDel;
  d.ino = ino;
  d.name = std::string(name);
  return d;
}

}  // namespace peregrine::meta
