// Allocator: best-fit, stripe-aligned windows, per-file reservations.
#include "peregrine/meta/allocator.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "peregrine/util/round.h"

namespace peregrine::meta {

namespace {
// A stripe width as the allocator uses it: whole blocks, at least one.
uint64_t whole_blocks(uint64_t width) { return std::max<uint64_t>(width / kBlockSize * kBlockSize, kBlockSize); }
}  // namespace

Allocator::Allocator(uint64_t data_offset, uint64_t data_size, uint64_t stripe_width, uint64_t window,
                     uint64_t stripe_unit)
    : data_offset_(data_offset),
      data_size_(data_size / kBlockSize * kBlockSize),
      window_setting_(std::max<uint64_t>(window, kBlockSize)),
      unit_(stripe_unit >= kBlockSize && stripe_unit % kBlockSize == 0 && whole_blocks(stripe_width) % stripe_unit == 0
                ? stripe_unit
                : whole_blocks(stripe_width)) {
  MutexLock lk(mu_);
  stripe_width_ = whole_blocks(stripe_width);
  window_ = round_up(window_setting_, stripe_width_);
  if (data_size_ > 0) insert_free(data_offset_, data_size_);
}

void Allocator::restripe(uint64_t stripe_width) {
  MutexLock lk(mu_);
  // Only a whole number of units (the stripe unit, or the whole old width
  // where the allocator was made without one): anything else is not a
  // restripe it can follow, and the old turns stay right enough.
  if (stripe_width < unit_ || stripe_width % unit_ != 0 || stripe_width == stripe_width_) return;
  drop_streams_locked();
  stripe_width_ = stripe_width;
  window_ = round_up(window_setting_, stripe_width_);
}

void Allocator::grow(uint64_t data_size) {
  data_size = data_size / kBlockSize * kBlockSize;
  MutexLock lk(mu_);
  const uint64_t old = data_size_.load();
  if (data_size <= old) return;
  insert_free(data_offset_ + old, data_size - old);
  data_size_.store(data_size, std::memory_order_release);
}

void Allocator::insert_free(uint64_t off, uint64_t len) {
  if (len == 0) return;
  auto next = by_off_.lower_bound(off);
  if (next != by_off_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      by_size_.erase({prev->second, prev->first});
      off = prev->first;
      len += prev->second;
      free_ -= prev->second;
      by_off_.erase(prev);
    }
  }
  if (next != by_off_.end() && off + len == next->first) {
    by_size_.erase({next->second, next->first});
    len += next->second;
    free_ -= next->second;
    by_off_.erase(next);
  }
  by_off_[off] = len;
  by_size_.insert({len, off});
  free_ += len;
}

void Allocator::take(uint64_t off, uint64_t len) {
  auto it = std::prev(by_off_.upper_bound(off));
  const uint64_t fo = it->first, fl = it->second;
  by_size_.erase({fl, fo});
  by_off_.erase(it);
  free_ -= fl;
  if (off > fo) {
    by_off_[fo] = off - fo;
    by_size_.insert({off - fo, fo});
    free_ += off - fo;
  }
  if (off + len < fo + fl) {
    by_off_[off + len] = fo + fl - off - len;
    by_size_.insert({fo + fl - off - len, off + len});
    free_ += fo + fl - off - len;
  }
}

bool Allocator::mark_used(uint64_t off, uint64_t len) {
  MutexLock lk(mu_);
  if (len == 0) return true;
  auto it = by_off_.upper_bound(off);
  if (it == by_off_.begin()) return false;
  --it;
  if (it->first + it->second < off + len) return false;
  take(off, len);
  return true;
}

bool Allocator::find_region(uint64_t want, uint64_t phase, uint64_t* off, uint64_t* len, bool* aligned_out) {
  *aligned_out = false;
  // Smallest free extent that holds `want` starting `phase` past a full
  // stripe (on the member whose turn it is).
  for (auto it = by_size_.lower_bound({want, 0}); it != by_size_.end(); ++it) {
    const uint64_t fo = it->second, fl = it->first;
    const uint64_t aligned = fo <= phase ? phase : round_up(fo - phase, stripe_width_) + phase;
    if (aligned + want <= fo + fl) {
      *off = aligned;
      *len = want;
      *aligned_out = true;
      return true;
    }
    // Extents much larger than asked always fit once aligned; stop scanning
    // after a few near-misses to keep this O(log n) in practice.
    if (fl >= want + stripe_width_) break;
  }
  auto it = by_size_.lower_bound({want, 0});
  if (it != by_size_.end()) {
    *off = it->second;
    *len = want;
    return true;
  }
  if (by_size_.empty()) return false;
  // Fragmented: the largest piece there is.
  auto last = std::prev(by_size_.end());
  *off = last->second;
  *len = last->first;
  return true;
}

void Allocator::drop_reservation_locked(Ino owner) {
  auto it = reserved_.find(owner);
  if (it == reserved_.end()) return;
  reserved_bytes_ -= it->second.len;
  insert_free(it->second.off, it->second.len);
  reserved_.erase(it);
}

int Allocator::allocate(Ino owner, uint64_t goal, uint64_t len, std::vector<VolRange>* out) {
  MutexLock lk(mu_);
  len = round_up(len, kBlockSize);
  if (len == 0) return 0;
  uint64_t own = 0;
  if (auto it = reserved_.find(owner); it != reserved_.end()) own = it->second.len;
  if (free_ + own < len) reclaim_discards_locked(lk, len, own);
  if (auto it = reserved_.find(owner); it != reserved_.end()) own = it->second.len;
  if (free_ + own < len) {
    // Take back everyone's reservations before saying no.
    for (auto it = reserved_.begin(); it != reserved_.end();) {
      if (it->first == owner) {
        ++it;
        continue;
      }
      reserved_bytes_ -= it->second.len;
      insert_free(it->second.off, it->second.len);
      it = reserved_.erase(it);
    }
    if (free_ + own < len) return -ENOSPC;
  }
  // *out may hold ranges of earlier calls: this call's start at first_out.
  const size_t first_out = out->size();
  auto emit = [out, first_out](uint64_t off, uint64_t l) {
    if (out->size() > first_out && out->back().off + out->back().len == off) {
      out->back().len += l;
    } else {
      out->push_back({off, l});
    }
  };
  uint64_t remaining = len;
  // 1. Continue in this file's reservation when it follows the goal (or
  //    there is no goal): a sequential writer stays contiguous.
  if (auto it = reserved_.find(owner); it != reserved_.end()) {
    VolRange& r = it->second;
    if (goal == 0 || goal == r.off) {
      const uint64_t n = std::min(remaining, r.len);
      emit(r.off, n);
      r.off += n;
      r.len -= n;
      reserved_bytes_ -= n;
      remaining -= n;
      if (r.len == 0) reserved_.erase(it);
    }
    if (remaining == 0) return 0;
    if (out->size() > first_out) goal = out->back().off + out->back().len;
    drop_reservation_locked(owner);  // used up, or the goal moved elsewhere
  }
  // 2. Extend in place right after the goal if that space is free.
  if (goal != 0) {
    auto it = by_off_.find(goal);
    if (it != by_off_.end()) {
      const uint64_t fl = it->second;
      const uint64_t n = std::min(remaining, fl);
      const uint64_t win = std::min(fl, round_up(n, window_));
      take(goal, win);
      emit(goal, n);
      remaining -= n;
      if (win > n) {
        reserved_[owner] = {goal + n, win - n};
        reserved_bytes_ += win - n;
      }
    }
  }
  // 3. A small file's first blocks: packed after the previous small file
  //    on the member whose turn it is.
  if (goal == 0 && out->size() == first_out && remaining <= std::min(kSmallFileBytes, unit_) &&
      pack_small_file(remaining, out))
    return 0;
  // 4. Carve new windows.
  while (remaining > 0) {
    uint64_t off = 0, rlen = 0;
    const uint64_t want = round_up(remaining, window_);
    const uint64_t phase = windows_ % members() * unit_;
    bool aligned = false;
    if (!find_region(want, phase, &off, &rlen, &aligned)) break;
    if (aligned) ++windows_;
    if (rlen < want) {
      // Only smaller pieces left: take a free extent (maybe all of it).
      auto fit = by_size_.lower_bound({remaining, 0});
      if (fit != by_size_.end()) {
        off = fit->second;
        rlen = std::min(fit->first, want);
      }
    }
    take(off, rlen);
    const uint64_t n = std::min(remaining, rlen);
    emit(off, n);
    remaining -= n;
    if (rlen > n) {
      drop_reservation_locked(owner);
      reserved_[owner] = {off + n, rlen - n};
      reserved_bytes_ += rlen - n;
    }
  }
  if (remaining > 0) {  // cannot happen after the free_ check; be safe
    for (size_t i = first_out; i < out->size(); ++i) insert_free((*out)[i].off, (*out)[i].len);
    out->resize(first_out);
    return -ENOSPC;
  }
  return 0;
}

void Allocator::drop_streams_locked() {
  for (uint64_t m = 0; m < members(); ++m) drop_reservation_locked(stream_owner(m));
}

bool Allocator::pack_small_file(uint64_t len, std::vector<VolRange>* out) {
  const uint64_t member = small_files_ % members();
  const Ino stream = stream_owner(member);
  auto it = reserved_.find(stream);
  if (it == reserved_.end() || it->second.len < len) {
    // The rest of this unit is too short: it goes back, and the stream
    // continues in a unit of the same member, the best fit as for windows,
    // so that freed space is used again before space never written (on a
    // sparse member file, space the host would have to allocate). On a
    // volume being filled that is the member's unit of the next stripe
    // row, adjacent on the drive.
    drop_reservation_locked(stream);
    uint64_t off = 0, rlen = 0;
    bool aligned = false;
    if (!find_region(unit_, member * unit_, &off, &rlen, &aligned) || !aligned) return false;
    take(off, unit_);
    it = reserved_.emplace(stream, VolRange{off, unit_}).first;
    reserved_bytes_ += unit_;
  }
  VolRange& r = it->second;
  out->push_back({r.off, len});
  r.off += len;
  r.len -= len;
  reserved_bytes_ -= len;
  if (r.len == 0) reserved_.erase(it);
  ++small_files_;
  return true;
}

void Allocator::free_now(VolRange r) {
  MutexLock lk(mu_);
  insert_free(r.off, r.len);
}

void Allocator::free_deferred(uint64_t lsn, VolRange r) {
  MutexLock lk(mu_);
  deferred_.push_back({lsn, r});
  deferred_bytes_ += r.len;
}

void Allocator::release_durable(uint64_t durable_lsn) {
  MutexLock lk(mu_);
  bool queued = false;
  while (!deferred_.empty() && deferred_.front().first <= durable_lsn) {
    const VolRange r = deferred_.front().second;
    deferred_bytes_ -= r.len;
    deferred_.pop_front();
    if (discard_on_free_ && !discards_stopped_) {
      // Its freeing is durable: no replay can give it back to its owner.
      discard_queue_.push_back(r);
      discard_queued_bytes_ += r.len;
      queued = true;
    } else {
      insert_free(r.off, r.len);
    }
  }
  if (queued) discard_work_cv_.notify_one();
}

void Allocator::reclaim_discards_locked(MutexLock& lk, uint64_t len, uint64_t own) {
  // Queued ranges are free already; their discard is only a courtesy.
  for (const VolRange& r : discard_queue_) insert_free(r.off, r.len);
  discard_queue_.clear();
  discard_queued_bytes_ = 0;
  discard_back_cv_.notify_all();
  // In flight: the device may be discarding them right now, and a write
  // there could be undone by it. Wait for them (the worker and FITRIM
  // never wait for this lock's holder's other locks).
  lk.wait(discard_back_cv_, [&] {
    mu_.assert_held();  // the wait holds it while it asks
    return free_ + reserved_bytes_ + own >= len || discard_in_flight_bytes_ == 0;
  });
}

void Allocator::set_discard_on_free(bool on) {
  MutexLock lk(mu_);
  discard_on_free_ = on;
}

bool Allocator::wait_for_discards(std::vector<VolRange>* out) {
  MutexLock lk(mu_);
  out->clear();
  lk.wait(discard_work_cv_, [this] {
    mu_.assert_held();  // the wait holds it while it asks
    return discards_stopped_ || !discard_queue_.empty();
  });
  if (discards_stopped_) return false;
  std::sort(discard_queue_.begin(), discard_queue_.end(),
            [](const VolRange& a, const VolRange& b) { return a.off < b.off; });
  for (const VolRange& r : discard_queue_) {
    if (!out->empty() && out->back().off + out->back().len == r.off) {
      out->back().len += r.len;
    } else {
      out->push_back(r);
    }
  }
  for (const VolRange& r : *out) discard_in_flight_[r.off] = r.len;
  discard_in_flight_bytes_ += discard_queued_bytes_;
  discard_queued_bytes_ = 0;
  discard_queue_.clear();
  return true;
}

void Allocator::stop_discards() {
  MutexLock lk(mu_);
  discards_stopped_ = true;
  for (const VolRange& r : discard_queue_) insert_free(r.off, r.len);
  discard_queue_.clear();
  discard_queued_bytes_ = 0;
  discard_work_cv_.notify_all();
  discard_back_cv_.notify_all();
}

void Allocator::take_free_for_trim(uint64_t* cursor, uint64_t end, uint64_t minlen, uint64_t max_piece,
                                   uint64_t max_bytes, std::vector<VolRange>* out) {
  MutexLock lk(mu_);
  out->clear();
  // The small-file streams' unused units are free space that no file will
  // give back at its close: trimmed as the rest, a stream starts afresh.
  drop_streams_locked();
  minlen = std::max<uint64_t>(minlen, kBlockSize);
  max_piece = std::max<uint64_t>(max_piece / kBlockSize * kBlockSize, kBlockSize);
  uint64_t taken = 0;
  // The free extent holding *cursor, or the first one after it.
  auto it = by_off_.upper_bound(*cursor);
  if (it != by_off_.begin() && std::prev(it)->first + std::prev(it)->second > *cursor) --it;
  while (it != by_off_.end() && it->first < end && taken < max_bytes) {
    const uint64_t s = std::max(it->first, *cursor);
    const uint64_t e = std::min(it->first + it->second, end);
    ++it;  // take() below rewrites the map around the current extent
    if (e <= s || e - s < minlen) {
      *cursor = std::max(*cursor, e);
      continue;
    }
    const uint64_t n = std::min({e - s, max_piece, max_bytes - taken});
    take(s, n);
    out->push_back({s, n});
    discard_in_flight_[s] = n;
    taken += n;
    *cursor = s + n;
    if (s + n < e) break;               // a piece limit: the rest of this extent comes next time
    it = by_off_.upper_bound(*cursor);  // iterators may point at erased nodes
    if (it != by_off_.begin() && std::prev(it)->first + std::prev(it)->second > *cursor) --it;
  }
  if (out->empty()) *cursor = end;
  discard_in_flight_bytes_ += taken;
}

void Allocator::discard_done(const std::vector<VolRange>& ranges) {
  MutexLock lk(mu_);
  for (const VolRange& r : ranges) {
    insert_free(r.off, r.len);
    discard_in_flight_bytes_ -= r.len;
    discard_in_flight_.erase(r.off);
  }
  discard_back_cv_.notify_all();
}

void Allocator::wait_discards_idle() {
  MutexLock lk(mu_);
  lk.wait(discard_back_cv_, [this] {
    mu_.assert_held();  // the wait holds it while it asks
    return discard_queue_.empty() && discard_in_flight_bytes_ == 0;
  });
}

uint64_t Allocator::discard_pending_bytes() const {
  MutexLock lk(mu_);
  return discard_queued_bytes_ + discard_in_flight_bytes_;
}

void Allocator::drop_reservation(Ino owner) {
  MutexLock lk(mu_);
  drop_reservation_locked(owner);
}

void Allocator::drop_all_reservations() {
  MutexLock lk(mu_);
  while (!reserved_.empty()) drop_reservation_locked(reserved_.begin()->first);
}

uint64_t Allocator::free_bytes() const {
  MutexLock lk(mu_);
  return free_ + reserved_bytes_ + deferred_bytes_ + discard_queued_bytes_ + discard_in_flight_bytes_;
}

uint64_t Allocator::deferred_bytes() const {
  MutexLock lk(mu_);
  return deferred_bytes_;
}

std::map<uint64_t, uint64_t> Allocator::free_map() const {
  MutexLock lk(mu_);
  std::map<uint64_t, uint64_t> m = by_off_;
  auto add = [&m](uint64_t off, uint64_t len) {
    auto next = m.lower_bound(off);
    if (next != m.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        len += prev->second;
        m.erase(prev);
      }
    }
    if (next != m.end() && off + len == next->first) {
      len += next->second;
      m.erase(next);
    }
    m[off] = len;
  };
  for (const auto& [o, r] : reserved_) add(r.off, r.len);
  for (const auto& [l, r] : deferred_) add(r.off, r.len);
  for (const VolRange& r : discard_queue_) add(r.off, r.len);
  for (const auto& [off, len] : discard_in_flight_) add(off, len);
  return m;
}

}  // namespace peregrine::meta
