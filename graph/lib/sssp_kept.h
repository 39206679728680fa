// Internal to sssp.cpp: delta-stepping over lists the reader keeps in
// memory, on several threads (GAP's sssp, in its essentials). A round
// splits the current bucket's vertices among the threads; a relaxation
// lowers a distance with an atomic compare-and-swap and files the vertex
// in the relaxing thread's own bins. Since no edge weighs more than the
// graph's largest weight W, every filed vertex lies at most W / delta + 1
// buckets past the current one, so the bins are a ring of W / delta + 2
// slots per thread, not a map (the load refuses a weight above W). The distances equal the semi-external run's;
// `rounds` and `relaxations` may vary from run to run on several threads
// (which thread lowers a distance first decides how often it is lowered).
//
// Thread rules: called on the reader's thread, which computes with a team
// of helpers started once for the run (thread_team.h). A thread appends only to
// its own bins; distances are read and lowered through atomics.
#pragma once

#include <cstdint>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/sssp.h"

namespace peregrine::graph::detail {

// Bin slots the ring needs for a largest weight and a delta; past
// kMaxRingSlots the kept run is not used (sssp.cpp keeps its map).
uint64_t ring_slots(uint64_t max_weight, uint64_t delta);
inline constexpr uint64_t kMaxRingSlots = 1 << 16;

// REQUIRES: reader.kept(); r holds the root alone (distance, delta);
// ring_slots(max_weight, r.delta) <= kMaxRingSlots.
void sssp_over_kept_lists(const AdjacencyReader& reader, bool weighted, uint64_t max_weight, uint32_t threads,
                          SsspResult& r);

}  // namespace peregrine::graph::detail
