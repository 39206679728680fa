// Semi-external betweenness centrality (GAP's bc): Brandes' dependency
// accumulation from a set of sources, unnormalised. For each source, a
// level-synchronous BFS counts the shortest paths to every vertex (sigma)
// and records the levels; then the levels are taken back from the deepest,
// each vertex v pulling over its own out-list from the successors w one
// level down: delta[v] += sigma[v] / sigma[w] * (1 + delta[w]). So every
// reached list is read once per source on the way out, and again on the
// way back if the vertex has a successor (leaves are skipped), in sorted,
// coalesced batches; only out-lists are needed, directed or not.
// score[v] is the sum over the sources s != v of delta_s[v]: on an
// undirected graph, each ordered pair (s, t) counts, as GAP's bc does
// (networkx's unnormalised betweenness halves it).
//
// Memory: 8 bytes a vertex for the scores, and for the source at hand 4
// for the depth, 16 for sigma and delta, 4 for the visit order, 1 for the
// successor flag.
//
// When the reader keeps the lists in memory, each level runs on `threads`
// threads over them (0: one per CPU): a level's new vertices are claimed
// by compare-and-swap of their depth and their path counts added
// atomically, exact in any order while they stay below 2^53; on the way
// back each vertex pulls alone. The scores do not depend on the thread
// count.
//
// Thread rules: runs on the calling (IO) thread, and over kept lists on
// a team of helper threads started once for the run, which wait between
// levels.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct BcResult {
  std::vector<Vertex> sources;
  std::vector<double> score;  // per vertex
  uint64_t levels = 0;        // BFS levels over all sources
};

// REQUIRES: every source < graph.num_vertices() (checked: error otherwise).
Expected<BcResult> run_bc(const Graph& graph, AdjacencyReader& reader, const std::vector<Vertex>& sources,
                          uint32_t threads = 1);

}  // namespace peregrine::graph
