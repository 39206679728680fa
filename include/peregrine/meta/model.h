// The whole in-memory metadata state: every inode by number, the orphan
// list (unlinked inodes still open, freed at last close or next mount) and
// the next inode number. Changed only by apply(Delta), both live and during
// journal replay, so the two cannot diverge.
//
// The Model also knows, exactly and at all times, how many bytes its
// checkpoint body would take (body_bytes): apply() adjusts it per delta, so
// the metadata layer can tell before a change whether the next checkpoint
// will still fit its slot, without encoding anything.
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

  // Recomputes body_bytes from the whole state (after a decode or a repair
  // that changed the model other than through apply()). O(size of state).
  void recount_body_bytes();

  // Deterministic text of the persistent state (tests, fsck messages).
  std::string dump() const;
  // Every inode number, sorted.
  std::vector<Ino> sorted_inos() const;

  std::unordered_map<Ino, std::unique_ptr<Inode>> inodes;
  std::set<Ino> orphans;
  Ino next_ino = kRootIno + 1;
  // Size of encode_checkpoint_body(*this), kept current by apply().
  uint64_t body_bytes = 0;
};

// Bytes each piece of the model takes in a checkpoint body
// (docs/metadata-format.md, section 2). encode_checkpoint_body() writes
// exactly these; a test checks that the two agree.
namespace body_size {
inline constexpr uint64_t kCounts = 16;  // u64 inode_count + u64 orphan_count
inline constexpr uint64_t kExtent = 25;  // file_off, vol_off, len, flags
inline constexpr uint64_t kOrphan = 8;
// attr, target length + target, xattr count, extent count, and for a
// directory next_cookie + entry count: an inode without xattrs, extents or
// entries.
inline uint64_t inode_base(bool is_dir, size_t target_len) { return 72 + 2 + target_len + 4 + 4 + (is_dir ? 16 : 0); }
inline uint64_t xattr(size_t name_len, size_t value_len) { return 1 + name_len + 4 + value_len; }
inline uint64_t dirent(size_t name_len) { return 8 + 8 + 1 + name_len; }
// The whole inode, with its xattrs, extents and entries.
uint64_t inode(const Inode& in);
}  // namespace body_size

}  // namespace peregrine::meta
