// ReadBlocks: the 4 KiB blocks that reads smaller than a block came from,
// kept in memory so that the next small read of the same block is answered
// without member IO. In fuse.cache=direct every read(2) reaches the daemon,
// and a member reads whole blocks: a program that reads a file 512 bytes
// (xfstests' fstest) or 4 bytes (generic/069) at a time cost one member
// read per call, 8 to 1024 per block.
//
// Why a kept block is never older than the file (docs/design.md section
// 2.3): every write of a file's bytes enters the file's gate as a writer
// (an aligned write shared, a partial write, tail block patch, truncate or
// fallocate exclusive), and that bumps the gate's write generation
// (io_gates.h). A block is kept with the generation its read entered with,
// only if no writer was inside then and the generation is still the same
// when the read has its bytes; a later read uses it only under that same
// generation, and only for a range the file's map still shows as written
// data at the same volume offset. So the first write after it, to any file
// that shares its gate, makes it useless. The kept bytes are the reply's:
// a tail block (tail_blocks.h) already laid over them.
//
// The generation belongs to the gate's stripe (inode % 256), so while any
// file of the stripe is being written, its blocks are neither kept nor
// used. A kept block answers even after its member has failed (the bytes
// are the file's), where a member read would fail.
//
// Slots are direct-mapped by (inode, block): a newer block takes the slot;
// `slots` of them, about 4.1 KiB each, live for the mount.
//
// Thread rules: thread-safe; each slot has its own lock, held only to copy
// 4 KiB in or out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class ReadBlocks {
 public:
  static constexpr uint64_t kBlock = 4096;

  // slots 0: nothing is ever kept.
  explicit ReadBlocks(size_t slots);

  bool enabled() const { return slot_count_ != 0; }

  // If ino's block at file offset block_off (at vol_off) is kept with
  // generation `generation`: copies its bytes [from, from + len) (inside
  // the block) to `out` and returns true.
  bool copy(uint64_t ino, uint64_t block_off, uint64_t vol_off, uint64_t generation, uint64_t from, uint64_t len,
            std::byte* out);
  // Keeps `block` (kBlock bytes) as ino's block at block_off, read from
  // vol_off under `generation`.
  void keep(uint64_t ino, uint64_t block_off, uint64_t vol_off, uint64_t generation, const std::byte* block);

  struct Counts {
    uint64_t hits = 0;  // reads answered from memory, since mount
    uint64_t kept = 0;  // blocks kept, since mount
  };
  Counts counts() const { return Counts{hits_.load(std::memory_order_relaxed), kept_.load(std::memory_order_relaxed)}; }

 private:
  struct Slot {
    Mutex mu;
    uint64_t ino GUARDED_BY(mu) = 0;  // 0: empty (no inode is 0)
    uint64_t block_off GUARDED_BY(mu) = 0;
    uint64_t vol_off GUARDED_BY(mu) = 0;
    uint64_t generation GUARDED_BY(mu) = 0;
    std::byte bytes[kBlock] GUARDED_BY(mu);
  };
  Slot& slot(uint64_t ino, uint64_t block_off);

  const size_t slot_count_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> kept_{0};
};

}  // namespace peregrine::fs
