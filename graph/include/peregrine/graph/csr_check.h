// Full verification of a graph directory against the format's invariants:
// the CRC32Cs match graph.meta, every list is strictly ascending (sorted,
// no duplicates), neighbour ids are in range, no self-loops; an undirected
// graph is symmetric (u->v present iff v->u), a directed graph's in-lists
// are exactly the transpose of its out-lists; the id map, if any, is
// strictly ascending. Used by `peregrine-graph check`, the tests and
// --validate.
// Thread rules: a pure function of its inputs; any thread.
#pragma once

#include "peregrine/graph/memory_graph.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

// `transpose`: the in-lists of a directed graph (required for one).
Status check_graph(const MemoryGraph& graph, const MemoryGraph* transpose = nullptr);

}  // namespace peregrine::graph
