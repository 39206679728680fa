// Semi-external breadth-first search: parent array in memory, adjacency
// through one AdjacencyReader (out-lists: on a directed graph the search
// follows arcs forward). Level-synchronous: each level is one
// read_lists() batch, so its reads are sorted and coalesced and keep the
// queue deep. Direction-optimising on an undirected graph (Beamer's, as
// GAP's bfs): a level whose frontier's lists hold more entries than the
// lists of the vertices not yet reached is expanded bottom-up, reading
// the unreached vertices' lists and taking as parent the first neighbour
// found in the frontier; so the widest levels read the smaller side. A
// directed graph's search stays top-down (bottom-up would need in-lists).
// When the reader keeps the lists in memory, each level runs on `threads`
// threads over them instead (bfs_kept.h), with the same depths.
// Thread rules: runs on the calling (IO) thread, and over kept lists on
// a team of helper threads started once for the run, which wait between
// levels.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct BfsResult {
  Vertex root = 0;
  std::vector<int64_t> parent;  // -1 = not reached; parent[root] == root
  std::vector<uint32_t> depth;  // kUnreached or the level: root 0, its neighbours 1, ...
  uint64_t reached = 0;         // vertices reached, root included
  uint64_t levels = 0;          // frontiers expanded = greatest depth + 1
  // The Graph500 edge count for TEPS: undirected edges of the root's
  // component (sum of reached degrees / 2); on a directed graph the arcs
  // leaving reached vertices (sum of their out-degrees).
  uint64_t component_edges = 0;
  uint64_t bottom_up_levels = 0;  // levels expanded bottom-up
  static constexpr uint32_t kUnreached = UINT32_MAX;
};

enum class BfsDirection { kOptimising, kTopDown };

// REQUIRES: root < graph.num_vertices() (checked: error otherwise).
// threads: over kept lists, 0 is one per CPU.
Expected<BfsResult> run_bfs(const Graph& graph, AdjacencyReader& reader, uint64_t root,
                            BfsDirection direction = BfsDirection::kOptimising, uint32_t threads = 1);

// The default root: the vertex of highest degree (lowest id on ties), so the
// search covers the giant component whatever the seed.
Vertex default_bfs_root(const Graph& graph);

// `count` distinct roots for a Graph500-style multi-search run: `first`,
// then vertices with at least one edge drawn pseudo-randomly from the
// graph's seed (deterministic). Fewer if the graph has fewer such vertices.
std::vector<Vertex> pick_bfs_roots(const Graph& graph, Vertex first, uint32_t count);

}  // namespace peregrine::graph
