// Semi-external connected components: one sequential sweep of the
// adjacency into a union-find held in memory (4 bytes a vertex), whose
// roots are their component's smallest vertex; each undirected edge is
// taken once (from its smaller end), each arc of a directed graph once,
// which joins its weakly connected components without the in-lists. The
// label of every vertex is the smallest id of its component, as the
// reference's. Min-label propagation, used before, read the adjacency
// 2-3 times on Kronecker graphs (and once more per round on a long path).
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
