#include "ring_budget.h"

#include <algorithm>

namespace peregrine::fs {
namespace {

uint64_t reservation(unsigned cpus, uint32_t entries, size_t payload) {
  return uint64_t{cpus} * entries * (kRingHeaderPage + payload);
}

// Entries of `payload` that fit the budget, at most `ring_depth`.
uint32_t entries_that_fit(unsigned cpus, uint32_t ring_depth, size_t payload, uint64_t budget) {
  uint64_t fit = budget / (uint64_t{cpus} * (kRingHeaderPage + payload));
  return static_cast<uint32_t>(std::min<uint64_t>(fit, ring_depth));
}

}  // namespace

RingPlan plan_rings(unsigned possible_cpus, uint32_t ring_depth, size_t max_request_bytes, uint64_t budget_bytes) {
  const unsigned cpus = std::max(1u, possible_cpus);
  const uint32_t deep = std::min(ring_depth, kDeepEntries);
  const uint32_t fewest = std::min(ring_depth, kFewestEntries);
  const size_t smallest = std::min(max_request_bytes, kSmallestPayload);

  RingPlan plan;
  plan.payload_bytes = max_request_bytes;
  // Depth first, down to what one deep application thread uses, then the
  // payload: a payload of a quarter costs a 1 MiB request four round trips
  // through the same ring, fewer entries cost every caller its depth.
  while (true) {
    uint32_t fit = entries_that_fit(cpus, ring_depth, plan.payload_bytes, budget_bytes);
    if (fit >= deep || plan.payload_bytes <= smallest) {
      plan.entries = std::max(fit, fewest);
      break;
    }
    plan.payload_bytes = std::max(smallest, plan.payload_bytes / 2);
  }
  plan.reserved_bytes = reservation(cpus, plan.entries, plan.payload_bytes);
  plan.within_budget = plan.reserved_bytes <= budget_bytes;
  return plan;
}

}  // namespace peregrine::fs
