// Internal to import's sliced id map: maps a batch of scratch records
// (id, payload) whose ids all fall in one slice of the id map to vertices,
// by sorting the batch by id and merge-joining it with the slice's sorted
// ids, instead of looking every id up in an index: the ids are then read
// in ascending order, a streaming pass instead of a cache miss or two per
// record. The batch is sorted and joined as two halves on two threads
// (two_halves.h).
// Thread rules: stateless; call from one thread at a time per batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "id_slices.h"
#include "peregrine/graph/edge_input.h"

namespace peregrine::graph::detail {

// Reorders recs and replaces each record's id (InputEdge::u) by
// first_vertex + its index in `ids` (ascending, unique); with `route`, the
// high 32 bits then hold route->part_of(payload), the slice of the
// payload (InputEdge::v), so the caller need not search for it. Returns an
// id of the batch that is not in `ids` (the batch is then partly mapped),
// or nullopt when every id was found. two_threads false: on the calling
// thread alone.
// REQUIRES: first_vertex + ids.size() <= 2^32.
std::optional<uint64_t> map_batch_to_slice(std::span<InputEdge> recs, std::span<const uint64_t> ids,
                                           uint64_t first_vertex, const IdSlices* route, bool two_threads);

}  // namespace peregrine::graph::detail
