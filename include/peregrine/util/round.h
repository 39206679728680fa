// Rounding a size or offset to a multiple (a block, a stripe row).
// Thread rules: pure functions, callable from any thread.
#pragma once

#include <cstdint>

namespace peregrine {

// v rounded up to a multiple of m (m > 0; v + m - 1 must not overflow).
constexpr uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
// v rounded down to a multiple of m (m > 0).
constexpr uint64_t round_down(uint64_t v, uint64_t m) { return v / m * m; }

}  // namespace peregrine
