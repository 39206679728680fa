// MemoryVolumeIo: sparse two-image (current / durable) block store.
#include "peregrine/meta/memory_volume_io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace peregrine::meta {

MemoryVolumeIo::MemoryVolumeIo(uint64_t size, bool track_durability) : size_(size), track_(track_durability) {}

void MemoryVolumeIo::put(Image& img, uint64_t block, const std::byte* src) {
  auto& slot = img[block];
  if (!slot) slot = std::make_unique<Block>();
  std::memcpy(slot->data(), src, 4096);
}

void MemoryVolumeIo::copy_image(const Image& from, Image* to) {
  for (const auto& [b, data] : from) put(*to, b, data->data());
}

int MemoryVolumeIo::read(uint64_t offset, std::span<std::byte> out) {
  if (offset % 4096 || out.size() % 4096 || offset + out.size() > size_) return -EINVAL;
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < out.size(); i += 4096) {
    auto it = current_.find((offset + i) / 4096);
    if (it == current_.end()) {
      std::memset(out.data() + i, 0, 4096);
    } else {
      std::memcpy(out.data() + i, it->second->data(), 4096);
    }
  }
  return 0;
}

int MemoryVolumeIo::write(uint64_t offset, std::span<const std::byte> data) {
  if (offset % 4096 || data.size() % 4096 || offset + data.size() > size_) return -EINVAL;
  std::lock_guard lk(mu_);
  const uint64_t n = ++writes_;
  if (crashed_ || n > crash_at_) {
    crashed_ = true;
    return 0;
  }
  // Write number crash_at_ is the last one: it lands (or with a TornMode
  // only some of its blocks do) and the crash happens right after it,
  // before any later flush.
  const bool last = n == crash_at_;
  const size_t blocks = data.size() / 4096;
  for (size_t i = 0; i < blocks; ++i) {
    if (last) {
      bool lands = true;
      switch (torn_) {
        case TornMode::kNone: lands = true; break;
        case TornMode::kFirstHalf: lands = i < blocks / 2; break;
        case TornMode::kEvenBlocks: lands = i % 2 == 0; break;
        case TornMode::kAllButFirst: lands = i > 0; break;
      }
      if (!lands) continue;
    }
    const uint64_t b = offset / 4096 + i;
    put(current_, b, data.data() + i * 4096);
    if (track_) {
      auto copy = std::make_unique<Block>();
      std::memcpy(copy->data(), data.data() + i * 4096, 4096);
      unflushed_.push_back({n, b, std::move(copy)});
    }
  }
  if (last) crashed_ = true;
  return 0;
}

int MemoryVolumeIo::discard(uint64_t offset, uint64_t length) {
  if (offset % 4096 || length % 4096 || offset + length > size_) return -EINVAL;
  std::lock_guard lk(mu_);
  if (crashed_) return 0;
  Block poison;
  poison.fill(kDiscardByte);
  const uint64_t first = offset / 4096, last = (offset + length) / 4096;
  for (uint64_t b = first; b < last; ++b) {
    put(current_, b, poison.data());
    if (track_) put(durable_, b, poison.data());
  }
  std::erase_if(unflushed_, [&](const Unflushed& u) { return u.block >= first && u.block < last; });
  discarded_ += length;
  return 0;
}

uint64_t MemoryVolumeIo::discarded_bytes() const {
  std::lock_guard lk(mu_);
  return discarded_;
}

int MemoryVolumeIo::flush() {
  std::lock_guard lk(mu_);
  ++flushes_;
  if (crashed_ || !track_) return 0;
  for (const Unflushed& u : unflushed_) put(durable_, u.block, u.data->data());
  unflushed_.clear();
  return 0;
}

void MemoryVolumeIo::crash_after_writes(uint64_t k, TornMode torn) {
  std::lock_guard lk(mu_);
  crash_at_ = k;
  torn_ = torn;
  if (writes_ >= k) crashed_ = true;
}

bool MemoryVolumeIo::crashed() const {
  std::lock_guard lk(mu_);
  return crashed_;
}

uint64_t MemoryVolumeIo::write_count() const {
  std::lock_guard lk(mu_);
  return writes_;
}

uint64_t MemoryVolumeIo::flush_count() const {
  std::lock_guard lk(mu_);
  return flushes_;
}

std::unique_ptr<MemoryVolumeIo> MemoryVolumeIo::crash_image(CrashPolicy policy, uint64_t seed) const {
  std::lock_guard lk(mu_);
  auto img = std::make_unique<MemoryVolumeIo>(size_, track_);
  const Image& src = (policy == CrashPolicy::kAllLanded || !track_) ? current_ : durable_;
  copy_image(src, &img->current_);
  if (policy == CrashPolicy::kRandomUnflushed && track_) {
    // Each unflushed write lands whole or not at all, independently:
    // the device may have reordered anything since the last flush.
    for (const Unflushed& u : unflushed_) {
      uint64_t h = (u.write + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xC2B2AE3D27D4EB4Full;
      h ^= h >> 31;
      h *= 0xBF58476D1CE4E5B9ull;
      h ^= h >> 29;
      if (h & 1) put(img->current_, u.block, u.data->data());
    }
  }
  if (track_) copy_image(img->current_, &img->durable_);
  return img;
}

void MemoryVolumeIo::poke(uint64_t offset, std::span<const std::byte> data) {
  std::lock_guard lk(mu_);
  size_t done = 0;
  while (done < data.size()) {
    const uint64_t pos = offset + done;
    const size_t in_block = pos % 4096;
    const size_t n = std::min<size_t>(4096 - in_block, data.size() - done);
    for (Image* img : {&current_, &durable_}) {
      auto& slot = (*img)[pos / 4096];
      if (!slot) slot = std::make_unique<Block>();
      std::memcpy(slot->data() + in_block, data.data() + done, n);
    }
    done += n;
  }
}

uint64_t MemoryVolumeIo::memory_bytes() const {
  std::lock_guard lk(mu_);
  return (current_.size() + durable_.size()) * 4096;
}

}  // namespace peregrine::meta
