// RingBudget: how big each FUSE ring is, so that the io-uring transport's
// memory does not grow with the machine. The kernel keeps one queue per
// possible CPU and every entry of every queue must hold a whole request's
// payload (the kernel refuses a smaller buffer), so the reservation is
// CPUs x entries x (payload + header page): at 128 entries of 1 MiB that is
// 8 GiB on a 64-CPU server. plan_rings() fits the shape into a per-mount
// budget (fuse.ring_memory_mib): it keeps the configured shape when it fits,
// else it first gives up entries down to kDeepEntries (the depth one
// application thread at QD 32 needs, since the kernel queues a caller's
// requests on its own CPU's ring), then halves the payload down to
// kSmallestPayload (the kernel then splits a larger read or write into
// several requests, which run side by side), and only then goes below
// kDeepEntries, never below kFewestEntries.
//
// Thread rules: a pure function, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace peregrine::fs {

struct RingPlan {
  uint32_t entries = 0;         // per ring
  size_t payload_bytes = 0;     // per entry: the largest request (max_write)
  uint64_t reserved_bytes = 0;  // address space of every ring together
  bool within_budget = true;    // false only at the smallest shape
};

inline constexpr uint32_t kDeepEntries = 32;
inline constexpr uint32_t kFewestEntries = 8;
inline constexpr size_t kSmallestPayload = 256 * 1024;
inline constexpr size_t kRingHeaderPage = 4096;  // per entry, before its payload

// `max_request_bytes` is the configured payload (a page multiple), and
// `ring_depth` the configured entries; neither is ever exceeded.
RingPlan plan_rings(unsigned possible_cpus, uint32_t ring_depth, size_t max_request_bytes, uint64_t budget_bytes);

}  // namespace peregrine::fs
