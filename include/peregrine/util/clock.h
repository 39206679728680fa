// Clock reads in nanoseconds: monotonic (CLOCK_MONOTONIC, the clock
// io_uring timeouts use) and coarse real time.
// Thread rules: callable from any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace peregrine {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// CLOCK_REALTIME_COARSE, the clock the kernel's current_time() reads: one
// tick's resolution, a vDSO read without the TSC.
inline int64_t realtime_coarse_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace peregrine
