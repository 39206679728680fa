// Full verification of a graph directory against the format's invariants:
// both CRC32Cs match graph.meta, every list is strictly ascending (sorted,
// no duplicates), neighbour ids are in range, no self-loops, and the graph
// is symmetric (u->v present iff v->u). Used by `peregrine-graph check` and
// the tests. Pure function of its inputs.
#pragma once

#include "peregrine/graph/memory_graph.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

Status check_graph(const MemoryGraph& graph);

}  // namespace peregrine::graph
