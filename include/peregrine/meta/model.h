// The whole in-memory metadata state: every inode by number, the orphan
// list (unlinked inodes still open, freed at last close or next mount) and
// the next inode number. Changed only by apply(Delta), both live and during
// journal replay, so the two cannot diverge.
//
// Inode numbers are never reused (64-bit counter, persisted), so every
// (ino, generation) pair is unique; generation is kept at 1 and exists for
// NFS file handles and for a future allocator that reuses numbers.
//
// Thread rules: none inside. Metadata guards its Model with its namespace
// lock; fsck and recovery own theirs exclusively.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "peregrine/meta/inode.h"
#include "peregrine/meta/records.h"

namespace peregrine::meta {

class Model {
 public:
  // An empty filesystem: the root directory (ino 1, 0755 root:root).
  static Model make_fresh(int64_t now_ns);

  Inode* find(Ino ino);
  const Inode* find(Ino ino) const;
  // Applies one delta. 0, or -EUCLEAN when the delta does not fit the state
  // (missing inode, entry of a non-directory, ...). Volume ranges the delta
  // unmaps are appended to *freed when given.
  int apply(const Delta& d, std::vector<VolRange>* freed);
  int apply(const Txn& txn, std::vector<VolRange>* freed);

  // Deterministic text of the persistent state (tests, fsck messages).
  std::string dump() const;
  // Every inode number, sorted.
  std::vector<Ino> sorted_inos() const;

  std::unordered_map<Ino, std::unique_ptr<Inode>> inodes;
  std::set<Ino> orphans;
  Ino next_ino = kRootIno + 1;
};

}  // namespace peregrine::meta
