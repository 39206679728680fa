// Semi-external connected components, Afforest's way (as gapbs runs it):
// a union-find held in memory (4 bytes a vertex, 1 more while it
// samples, and 4 for each vertex read again), whose roots are their
// component's smallest vertex. An undirected graph: one sequential sweep
// links each vertex to its first two neighbours; then only the lists of
// the vertices outside the largest set so made (with more than two
// neighbours) are read again and linked whole. A directed graph: one
// sweep, each arc once, which joins its weakly connected components
// without the in-lists. The label of every vertex is the smallest id of
// its component, as the reference's.
//
// Thread rules: runs on the calling (IO) thread.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct CcResult {
  std::vector<Vertex> label;  // smallest vertex id of the component
  uint64_t components = 0;    // isolated vertices count as components
  uint64_t largest = 0;       // vertices in the largest component
  uint64_t rounds = 0;
};

// On a directed graph: the weakly connected components.
Expected<CcResult> run_cc(const Graph& graph, AdjacencyReader& reader);

// Fills components/largest from labels that name a component's minimum id.
void summarize_components(CcResult* r);

}  // namespace peregrine::graph
