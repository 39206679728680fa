// Internal to the adjacency reader: the largest of a run of 32-bit
// entries, the check that every neighbour id names a vertex and every
// weight is within the graph's largest. It is the first touch of every byte
// a read brings, so it is compiled to run several entries per instruction
// (graph/CMakeLists.txt) and has no early exit to stop that.
// Thread rules: a pure function; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace peregrine::graph::detail {

// 0 for an empty run.
uint32_t largest_entry(std::span<const uint32_t> entries);

// The index of the first entry not below `below`, entries.size() when
// none is: largest_entry() over the run, a search only when it fails.
size_t first_not_below(std::span<const uint32_t> entries, uint64_t below);

}  // namespace peregrine::graph::detail
