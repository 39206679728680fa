// An in-memory VolumeIo for tests and benchmarks, with crash injection.
//
// Storage is sparse (4 KiB blocks, missing blocks read as zeros, like a
// freshly zeroed metadata area). It models durability: writes land in the
// "current" image at once but only become durable at the next flush().
//
// crash_after_writes(k): writes 1..k land (write k, the crashing write, only
// partly with a TornMode) and the crash happens right after write k: every
// later write AND flush is dropped (the process "keeps running" but nothing
// reaches the disk), so write k is never flushed. k = 0: nothing lands.
// crash_image(policy) then gives the image a reboot would see:
//   kAllLanded     - every write up to the crash point landed (incl. torn part)
//   kUnflushedLost - only what was flushed before the crash survived
//   kRandomUnflushed - what was flushed, plus a seed-chosen subset of the
//                    writes since (each lands whole or not at all), as a
//                    device that reorders its write cache would leave it
//
// Thread rules: all methods take one internal mutex; safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

class MemoryVolumeIo : public VolumeIo {
 public:
  enum class TornMode { kNone, kFirstHalf, kEvenBlocks, kAllButFirst };
  enum class CrashPolicy { kAllLanded, kUnflushedLost, kRandomUnflushed };

  // track_durability=false keeps one copy only (benchmarks): flush is a
  // no-op and crash images are not available.
  explicit MemoryVolumeIo(uint64_t size, bool track_durability = true);

  uint64_t size() const override { return size_; }
  int read(uint64_t offset, std::span<std::byte> out) override;
  int write(uint64_t offset, std::span<const std::byte> data) override;
  int flush() override;
  // A discard lands at once in both images, as a device that discards
  // immediately and for good would have it (the worst case for a crash),
  // and cancels unflushed writes to those blocks: the blocks then read as
  // kDiscardByte, so a test sees any data a discard should not have hit.
  // Dropped after the crash point, like writes.
  int discard(uint64_t offset, uint64_t length) override;
  static constexpr std::byte kDiscardByte{0xD5};
  uint64_t discarded_bytes() const;

  void crash_after_writes(uint64_t k, TornMode torn = TornMode::kNone);
  bool crashed() const;
  uint64_t write_count() const;  // writes attempted so far
  uint64_t flush_count() const;
  std::unique_ptr<MemoryVolumeIo> crash_image(CrashPolicy policy, uint64_t seed = 0) const;
  // Overwrites bytes in both images, bypassing crash logic (plant damage).
  void poke(uint64_t offset, std::span<const std::byte> data);
  // Bytes held in memory (both images).
  uint64_t memory_bytes() const;

 private:
  using Block = std::array<std::byte, 4096>;
  using Image = std::unordered_map<uint64_t, std::unique_ptr<Block>>;
  static void put(Image& img, uint64_t block, const std::byte* src);
  static void copy_image(const Image& from, Image* to);

  const uint64_t size_;
  const bool track_;
  mutable std::mutex mu_;
  Image current_;
  Image durable_;
  struct Unflushed {
    uint64_t write;  // write number
    uint64_t block;
    std::unique_ptr<Block> data;
  };
  std::vector<Unflushed> unflushed_;  // blocks written since the last flush
  uint64_t writes_ = 0;
  uint64_t flushes_ = 0;
  uint64_t discarded_ = 0;
  uint64_t crash_at_ = UINT64_MAX;
  TornMode torn_ = TornMode::kNone;
  bool crashed_ = false;
};

}  // namespace peregrine::meta
