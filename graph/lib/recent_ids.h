// Internal to import: a direct-mapped table of recently seen vertex ids
// that keeps most repeats of an id out of the id sort.
// Thread rules: owned by one thread.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "peregrine/graph/rng.h"

namespace peregrine::graph::detail {

// Drops most repeats of an id before they reach the id sort: a direct-mapped
// table of recently seen ids (hubs and runs of one source hit it). An id it
// passes may still be a repeat; the sort removes those.
class RecentIds {
 public:
  explicit RecentIds(uint64_t memory_bytes)
      : slots_(std::min<uint64_t>(1 << 20, std::bit_floor(std::max<uint64_t>(memory_bytes / 64, 1024)))),
        shift_(64 - static_cast<unsigned>(std::countr_zero(slots_.size()))) {}
  // True if `id` is new to the table (and remembers it).
  bool fresh(uint64_t id) {
    if (id == UINT64_MAX) return true;  // slots hold id + 1; 0 is empty
    uint64_t& s = slots_[mix64(id) >> shift_];
    if (s == id + 1) return false;
    s = id + 1;
    return true;
  }

 private:
  std::vector<uint64_t> slots_;
  unsigned shift_;
};

}  // namespace peregrine::graph::detail
