// Semi-external connected components by min-label propagation.
//
// Every vertex starts with its own id as label. The first round sweeps the
// whole adjacency sequentially; later rounds read only the lists of vertices
// whose label dropped, in one batch per round. At the fixed point every
// vertex carries the smallest id of its component, which is what the
// union-find reference produces too. Labels live in memory.
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

// On a directed graph pass the reader of the in-lists too (open_transpose):
// the components are then the weakly connected ones, arcs taken both ways.
Expected<CcResult> run_cc(const Graph& graph, AdjacencyReader& reader, AdjacencyReader* in_reader = nullptr);

// Fills components/largest from labels that name a component's minimum id.
void summarize_components(CcResult* r);

}  // namespace peregrine::graph
