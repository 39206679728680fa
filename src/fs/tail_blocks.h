// TailBlocks: the partial last block of files written a little at a time (a
// log written a line per write(2); xfstests generic/069 appends 4-byte
// integers), kept in memory so that a write inside that block patches it
// instead of reading and writing the block on the members: in
// fuse.cache=direct every write reaches the daemon, and each of those
// read-modify-writes cost two member IOs.
//
// How the bytes stay safe and visible (docs/design.md section 2.3):
// - A tail is made only from a block just written through to the members
//   (keep()), so its block is allocated and marked written, and what the
//   members hold of it is the file as of some earlier write.
// - A write inside the tail that grows the file patches it (absorb())
//   before its size change reaches the metadata layer; that record is
//   what brings a commit (a rewrite within the size journals nothing, so
//   fs_write.cpp writes those through). Before metadata is persisted, the
//   commit leader writes every dirty tail back (write_back_all(),
//   registered with Metadata::set_before_persist), and the batch flushes
//   the members before its records (a grown size is data-first): the
//   durable size never covers bytes that are not durable. fsync writes its
//   file's tail back first.
// - Every other operation on the file's bytes sees it: reads lay it over
//   what the members return (copy_if_inside()); writes that are not inside
//   it, block-aligned writes over it, truncate and fallocate write it back
//   and drop it first, with the file's exclusive gate held.
// - A tail whose block no longer belongs to its file (unlinked, truncated)
//   is dropped by the next write_back_all() unwritten, before the commit
//   that lets the allocator hand the block out again.
// - At most `max_blocks` tails live (about 4.2 KiB each); one left alone
//   for two write-back passes (two commits: the interval, or any fsync)
//   is dropped.
// - A write-back that fails fails the commit that ran it: the volume goes
//   read-only (the member's error is logged with its name), as for a
//   journal write error, rather than commit a size over lost bytes.
//
// Thread rules: thread-safe. The file's gate (io_gates.h) orders what
// touches one file's tail: absorb, keep and write_back_and_drop need it
// exclusive, copy_if_inside and overlaps either way; write_back and
// write_back_all need none. Lock order: the file's gate, then a tail's
// write-back lock, then its bytes' lock; the map's lock is taken alone.
// Member IO happens only under a write-back lock, never under the others.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::fs {

class TailBlocks {
 public:
  static constexpr uint64_t kBlock = 4096;

  // max_blocks 0: no tail is ever kept.
  explicit TailBlocks(size_t max_blocks) : max_blocks_(max_blocks) {}

  bool enabled() const { return max_blocks_ != 0; }
  // No tail lives. Exact for a caller that holds a file's gate as far as
  // that file is concerned: its tail was made under the gate.
  bool empty() const { return live_.load(std::memory_order_acquire) == 0; }

  // If ino's tail holds [off, off + size) and its block is at vol_off:
  // patches it and returns true. REQUIRES: ino's gate exclusively.
  bool absorb(uint64_t ino, uint64_t off, uint64_t vol_off, const std::byte* data, uint64_t size);
  // Keeps `block` (kBlock bytes: the file's bytes from file_off, just
  // written through to vol_off) as ino's tail, clean. Does nothing when
  // max_blocks tails live. REQUIRES: ino's gate exclusively, no tail of ino.
  void keep(uint64_t ino, uint64_t file_off, uint64_t vol_off, const std::byte* block);
  // Writes ino's tail back if it is dirty, then drops it. On a write error
  // the tail stays (dirty) and the error is returned. *waited (if given)
  // is set when it waited for another thread's write-back of that tail.
  // REQUIRES: ino's gate exclusively.
  int write_back_and_drop(uint64_t ino, VolumeIo& io, bool* waited = nullptr);
  // Writes ino's tail back if it is dirty (fsync), keeping it.
  int write_back(uint64_t ino, VolumeIo& io);

  // Whether ino's tail block lies in [start, end).
  // REQUIRES: ino's gate, either way.
  bool overlaps(uint64_t ino, uint64_t start, uint64_t end) const;
  // If ino's tail block lies in [start, end) (block-aligned bounds):
  // copies its kBlock bytes to `out`, sets *block_off to its file offset
  // and returns true. REQUIRES: ino's gate, either way.
  bool copy_if_inside(uint64_t ino, uint64_t start, uint64_t end, uint64_t* block_off, std::byte* out) const;

  // Whether ino's block at file_off is still the one at vol_off, written.
  using StillMapped = std::function<bool(uint64_t ino, uint64_t file_off, uint64_t vol_off)>;
  // The commit leader, before metadata is persisted: writes every dirty
  // tail back whose block `still_mapped` confirms, drops the others and
  // those clean for two passes, then flushes the members' caches if it
  // wrote anything. 0, or the first error (the failed tails stay dirty).
  int write_back_all(VolumeIo& io, const StillMapped& still_mapped);

  struct Counts {
    uint64_t live = 0;          // tails now
    uint64_t absorbed = 0;      // writes that patched a tail, since mount
    uint64_t written_back = 0;  // tail write-backs, since mount
  };
  Counts counts() const;

 private:
  // About 4.2 KiB: the write-back copies the bytes to an aligned buffer
  // of its own (O_DIRECT), so that the tail needs no page alignment.
  struct Tail {
    Mutex write_back_mu;  // one write-back at a time, so they land in order
    mutable Mutex bytes_mu;
    uint64_t file_off = 0;  // set before the tail is shared
    uint64_t vol_off = 0;
    uint64_t version GUARDED_BY(bytes_mu) = 0;          // absorbs so far
    uint64_t written_version GUARDED_BY(bytes_mu) = 0;  // the version on the members
    uint32_t idle_passes GUARDED_BY(bytes_mu) = 0;      // write-back passes without an absorb
    bool dropped GUARDED_BY(bytes_mu) = false;          // out of the map: absorb must not patch it
    std::byte bytes[kBlock] GUARDED_BY(bytes_mu);
  };
  using TailPtr = std::shared_ptr<Tail>;

  TailPtr find(uint64_t ino) const EXCLUDES(map_mu_);
  // Writes t back if dirty. *wrote: it did. REQUIRES: t->write_back_mu.
  int write_back_locked(Tail& t, VolumeIo& io, bool* wrote) REQUIRES(t.write_back_mu);
  // Takes t out of the map (if it is still ino's) and marks it dropped.
  void drop(uint64_t ino, const TailPtr& t) EXCLUDES(map_mu_);

  const size_t max_blocks_;
  std::atomic<size_t> live_{0};
  // Tails per inode-number bucket, changed under map_mu_ with the map: a
  // read or write of a file without a tail answers "none" from its bucket
  // alone, without the map's lock (one live log must not put a lock on
  // every other file's IO). Exact for a caller holding the file's gate, as
  // empty() is.
  static constexpr size_t kBuckets = 1024;
  mutable std::atomic<uint32_t> in_bucket_[kBuckets] = {};
  std::atomic<uint32_t>& bucket(uint64_t ino) const { return in_bucket_[ino % kBuckets]; }
  std::atomic<uint64_t> absorbed_{0};
  std::atomic<uint64_t> written_back_{0};
  mutable Mutex map_mu_;
  std::unordered_map<uint64_t, TailPtr> tails_ GUARDED_BY(map_mu_);
};

}  // namespace peregrine::fs
