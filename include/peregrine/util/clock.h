// Monotonic time in nanoseconds (CLOCK_MONOTONIC, the clock io_uring
// timeouts use). Callable from any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace peregrine {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace peregrine
