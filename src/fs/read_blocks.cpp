#include "read_blocks.h"

#include <cstring>

namespace peregrine::fs {

ReadBlocks::ReadBlocks(size_t slots)
    : slot_count_(slots), slots_(slots != 0 ? std::make_unique<Slot[]>(slots) : nullptr) {}

ReadBlocks::Slot& ReadBlocks::slot(uint64_t ino, uint64_t block_off) {
  // splitmix64's finaliser: neighbouring blocks of one file, and one block
  // of neighbouring inodes, land in different slots.
  uint64_t x = ino * 0x9E3779B97F4A7C15ull + block_off / kBlock;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return slots_[x % slot_count_];
}

bool ReadBlocks::copy(uint64_t ino, uint64_t block_off, uint64_t vol_off, uint64_t generation, uint64_t from,
                      uint64_t len, std::byte* out) {
  if (slot_count_ == 0 || generation == 0 || from + len > kBlock) return false;
  Slot& s = slot(ino, block_off);
  MutexLock lock(s.mu);
  if (s.ino != ino || s.block_off != block_off || s.vol_off != vol_off || s.generation != generation) return false;
  std::memcpy(out, s.bytes + from, len);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ReadBlocks::keep(uint64_t ino, uint64_t block_off, uint64_t vol_off, uint64_t generation, const std::byte* block) {
  if (slot_count_ == 0 || generation == 0 || ino == 0) return;
  Slot& s = slot(ino, block_off);
  MutexLock lock(s.mu);
  s.ino = ino;
  s.block_off = block_off;
  s.vol_off = vol_off;
  s.generation = generation;
  std::memcpy(s.bytes, block, kBlock);
  kept_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace peregrine::fs
