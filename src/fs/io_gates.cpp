#include "peregrine/fs/io_gates.h"

#include <algorithm>

namespace peregrine::fs {
namespace {

bool overlap(const IoSpan& a, const IoSpan& b) { return a.start < b.end && b.start < a.end; }

}  // namespace

template <typename MayEnter>
void IoGates::wait(Gate& g, MutexLock& lock, MayEnter may_enter) {
  if (may_enter()) return;
  if (before_wait_) {
    // Unlocked: handing staged IO on can block at a drive's pressure point
    // until the drive thread completes IO, and completing IO unlocks gates.
    g.mu.unlock();
    before_wait_();
    g.mu.lock();
  }
  lock.wait(g.cv, may_enter);
}

void IoGates::lock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    return !g.exclusive && g.exclusive_waiting == 0;
  });
  ++g.shared;
}

void IoGates::unlock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  if (--g.shared == 0 && g.exclusive_waiting != 0) g.cv.notify_all();
}

void IoGates::lock_shared_read(uint64_t ino, const IoSpan& read, bool fills_page_cache, uint64_t* generation) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  auto older_write_inside = [&] {
    g.mu.assert_held();  // called from wait()'s predicate
    if (read.unique == 0) return false;
    for (const Seen& w : g.writes) {
      if (w.ino == ino && w.span.unique < read.unique && overlap(w.span, read)) return true;
    }
    return false;
  };
  bool counted = false;
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    bool ordered = !older_write_inside();
    if (!ordered && !counted) {
      counted = true;
      ++g.order_waiting;
    }
    return ordered && !g.exclusive && g.exclusive_waiting == 0;
  });
  if (counted) --g.order_waiting;
  ++g.shared;
  if (generation != nullptr) *generation = generation_of(g);
  if (read.unique == 0 || !fills_page_cache) return;
  Seen& slot = g.reads[g.next_read];
  g.forgotten_unique = std::max(g.forgotten_unique, slot.span.unique);
  slot = Seen{ino, read};
  g.next_read = (g.next_read + 1) % kRecentReads;
  g.reads_kept = std::min<uint32_t>(g.reads_kept + 1, kRecentReads);
}

bool IoGates::filled_recently(const Gate& g, uint64_t ino, const IoSpan& write) {
  if (write.unique == 0) return false;
  if (g.forgotten_unique > write.unique) return true;
  // Only the slots filled so far: with no page-cache fill on the stripe
  // (direct IO without a mapping, the usual case) a write looks at none.
  for (uint32_t i = 0; i < g.reads_kept; ++i) {
    const Seen& r = g.reads[i];
    if (r.ino == ino && overlap(r.span, write)) return true;
  }
  return false;
}

bool IoGates::lock_shared_write(uint64_t ino, const IoSpan& write) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    return !g.exclusive && g.exclusive_waiting == 0;
  });
  return enter_shared_write(g, ino, write);
}

bool IoGates::try_lock_shared_write(uint64_t ino, const IoSpan& write) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  if (g.exclusive || g.exclusive_waiting != 0) return false;
  return enter_shared_write(g, ino, write);
}

bool IoGates::enter_shared_write(Gate& g, uint64_t ino, const IoSpan& write) {
  if (filled_recently(g, ino, write)) return false;
  ++g.shared;
  ++g.shared_writers;
  ++g.write_generation;
  if (write.unique != 0) g.writes.push_back(Seen{ino, write});
  return true;
}

void IoGates::unlock_shared_write(uint64_t ino, const IoSpan& write) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  if (write.unique != 0) {
    auto it = std::find_if(g.writes.begin(), g.writes.end(), [&](const Seen& w) {
      return w.ino == ino && w.span.unique == write.unique && w.span.start == write.start && w.span.end == write.end;
    });
    if (it != g.writes.end()) {
      *it = g.writes.back();
      g.writes.pop_back();
    }
  }
  --g.shared;
  --g.shared_writers;
  if ((g.shared == 0 && g.exclusive_waiting != 0) || g.order_waiting != 0) g.cv.notify_all();
}

void IoGates::mark_answered(uint64_t ino, const IoSpan& write) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  g.writes.push_back(Seen{ino, answered(write)});
}

uint64_t IoGates::write_generation(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  return generation_of(g);
}

bool IoGates::page_cache_holds(uint64_t ino, const IoSpan& write) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  return filled_recently(g, ino, write);
}

void IoGates::lock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  ++g.exclusive_waiting;
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    return !g.exclusive && g.shared == 0;
  });
  --g.exclusive_waiting;
  g.exclusive = true;
  ++g.write_generation;
}

bool IoGates::try_lock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  if (g.exclusive || g.shared != 0 || g.exclusive_waiting != 0) return false;
  g.exclusive = true;
  ++g.write_generation;
  return true;
}

void IoGates::unlock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  g.exclusive = false;
  g.cv.notify_all();
}

}  // namespace peregrine::fs
