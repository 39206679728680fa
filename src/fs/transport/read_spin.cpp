#include "peregrine/fs/read_spin.h"

#include <algorithm>

namespace peregrine::fs {

bool ReadSpin::try_begin() {
  if (limit_ns() == 0) return false;
  // Acquire pairs with the release of found()/missed(): nothing else is
  // handed over, but the place must not be taken twice.
  return !spinning_.exchange(true, std::memory_order_acquire);
}

void ReadSpin::found() {
  found_.fetch_add(1, std::memory_order_relaxed);
  long_waits_.store(0, std::memory_order_relaxed);
  spinning_.store(false, std::memory_order_release);
}

void ReadSpin::missed() {
  sleeps_.fetch_add(1, std::memory_order_relaxed);
  spinning_.store(false, std::memory_order_release);
}

void ReadSpin::adapt(uint64_t waited_ns) {
  const uint64_t limit = limit_ns();
  const uint64_t window = window_ns();
  uint64_t next = window;
  if (waited_ns <= limit) {
    // A longer spin would have found it without the sleep.
    long_waits_.store(0, std::memory_order_relaxed);
    next = std::min(std::max(window * 2, kGrowStartNs), limit);
  } else if (long_waits_.fetch_add(1, std::memory_order_relaxed) + 1 >= kLongWaitsToShrink && window != 0) {
    next = window / 2 < kGrowStartNs ? 0 : window / 2;
  }
  if (next != window) window_ns_.store(next, std::memory_order_relaxed);
}

}  // namespace peregrine::fs
