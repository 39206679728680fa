#include "tail_blocks.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "peregrine/util/aligned_buffer.h"

namespace peregrine::fs {

TailBlocks::TailPtr TailBlocks::find(uint64_t ino) const {
  if (bucket(ino).load(std::memory_order_acquire) == 0) return nullptr;
  MutexLock lock(map_mu_);
  auto it = tails_.find(ino);
  return it == tails_.end() ? nullptr : it->second;
}

bool TailBlocks::absorb(uint64_t ino, uint64_t off, uint64_t vol_off, const std::byte* data, uint64_t size) {
  if (empty()) return false;
  TailPtr t = find(ino);
  if (t == nullptr || off < t->file_off || off + size > t->file_off + kBlock || t->vol_off != vol_off) return false;
  MutexLock lock(t->bytes_mu);
  // Dropped by a write-back pass a moment ago: its bytes are on the
  // members, and the caller's read-modify-write finds them there.
  if (t->dropped) return false;
  std::memcpy(t->bytes + (off - t->file_off), data, size);
  ++t->version;
  t->idle_passes = 0;
  absorbed_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void TailBlocks::keep(uint64_t ino, uint64_t file_off, uint64_t vol_off, const std::byte* block) {
  if (!enabled()) return;
  auto t = std::make_shared<Tail>();
  t->file_off = file_off;
  t->vol_off = vol_off;
  {
    MutexLock lock(t->bytes_mu);
    std::memcpy(t->bytes, block, kBlock);
  }
  MutexLock lock(map_mu_);
  auto it = tails_.find(ino);
  if (it == tails_.end() && tails_.size() >= max_blocks_) return;
  if (it != tails_.end()) {
    it->second = std::move(t);  // one a write-back pass dropped and has yet to erase
  } else {
    tails_.emplace(ino, std::move(t));
    bucket(ino).fetch_add(1, std::memory_order_release);
  }
  live_.store(tails_.size(), std::memory_order_release);
}

void TailBlocks::drop(uint64_t ino, const TailPtr& t) {
  {
    MutexLock lock(t->bytes_mu);
    t->dropped = true;
  }
  MutexLock lock(map_mu_);
  auto it = tails_.find(ino);
  if (it != tails_.end() && it->second == t) {
    tails_.erase(it);
    bucket(ino).fetch_sub(1, std::memory_order_release);
  }
  live_.store(tails_.size(), std::memory_order_release);
}

int TailBlocks::write_back_locked(Tail& t, VolumeIo& io, bool* wrote) {
  uint64_t version;
  AlignedBuffer snapshot;
  {
    MutexLock lock(t.bytes_mu);
    // Dropped: its block may no longer be its file's.
    if (t.dropped || t.version == t.written_version) return 0;
    try {
      snapshot = AlignedBuffer::uninitialised(kBlock);
    } catch (const std::bad_alloc&) {
      return -ENOMEM;
    }
    std::memcpy(snapshot.data(), t.bytes, kBlock);
    version = t.version;
  }
  if (int rc = io.write(t.vol_off, snapshot.span()); rc != 0) return rc;
  {
    MutexLock lock(t.bytes_mu);
    t.written_version = version;
  }
  written_back_.fetch_add(1, std::memory_order_relaxed);
  if (wrote != nullptr) *wrote = true;
  return 0;
}

int TailBlocks::write_back_and_drop(uint64_t ino, VolumeIo& io, bool* waited) {
  if (empty()) return 0;
  TailPtr t = find(ino);
  if (t == nullptr) return 0;
  if (!t->write_back_mu.try_lock()) {
    if (waited != nullptr) *waited = true;  // a commit is writing it back
    t->write_back_mu.lock();
  }
  MutexLock lock(t->write_back_mu, std::adopt_lock);
  if (int rc = write_back_locked(*t, io, nullptr); rc != 0) return rc;
  drop(ino, t);
  return 0;
}

int TailBlocks::write_back(uint64_t ino, VolumeIo& io) {
  if (empty()) return 0;
  TailPtr t = find(ino);
  if (t == nullptr) return 0;
  MutexLock lock(t->write_back_mu);
  return write_back_locked(*t, io, nullptr);
}

bool TailBlocks::overlaps(uint64_t ino, uint64_t start, uint64_t end) const {
  if (empty()) return false;
  TailPtr t = find(ino);
  return t != nullptr && t->file_off < end && start < t->file_off + kBlock;
}

bool TailBlocks::copy_if_inside(uint64_t ino, uint64_t start, uint64_t end, uint64_t* block_off, std::byte* out) const {
  if (empty()) return false;
  TailPtr t = find(ino);
  if (t == nullptr || t->file_off < start || t->file_off + kBlock > end) return false;
  MutexLock lock(t->bytes_mu);
  std::memcpy(out, t->bytes, kBlock);
  *block_off = t->file_off;
  return true;
}

int TailBlocks::write_back_all(VolumeIo& io, const StillMapped& still_mapped) {
  if (empty()) return 0;
  std::vector<std::pair<uint64_t, TailPtr>> all;
  {
    MutexLock lock(map_mu_);
    all.assign(tails_.begin(), tails_.end());
  }
  int first_error = 0;
  bool wrote = false;
  for (auto& [ino, t] : all) {
    MutexLock write_back_lock(t->write_back_mu);
    {
      MutexLock lock(t->bytes_mu);
      if (t->dropped) continue;
    }
    // Unlinked or truncated: its block may be freed, and must not be
    // written once the allocator can hand it out (after this commit).
    if (!still_mapped(ino, t->file_off, t->vol_off)) {
      drop(ino, t);
      continue;
    }
    bool this_wrote = false;
    if (int rc = write_back_locked(*t, io, &this_wrote); rc != 0) {
      if (first_error == 0) first_error = rc;
      continue;
    }
    wrote = wrote || this_wrote;
    if (this_wrote) continue;
    bool idle = false;
    {
      // Marked under the bytes' lock, with the check that it is clean: an
      // absorb after this sees it dropped and goes to the members, which
      // hold every byte.
      MutexLock lock(t->bytes_mu);
      if (t->version == t->written_version && ++t->idle_passes >= 2) idle = t->dropped = true;
    }
    if (idle) drop(ino, t);
  }
  // Before the metadata that counts these bytes: on the media, not in a
  // member's cache.
  if (wrote) {
    if (int rc = io.flush(); rc != 0 && first_error == 0) first_error = rc;
  }
  return first_error;
}

TailBlocks::Counts TailBlocks::counts() const {
  Counts c;
  c.live = live_.load(std::memory_order_acquire);
  c.absorbed = absorbed_.load(std::memory_order_relaxed);
  c.written_back = written_back_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace peregrine::fs
