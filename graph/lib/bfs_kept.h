// Internal to bfs.cpp: the search over lists the reader keeps in memory,
// on several threads (GAP's bfs, in its essentials). A top-down level
// splits the frontier among the threads, which claim each new vertex with
// a compare-and-swap of its parent; a bottom-up level splits all vertices,
// and each unreached one looks for a neighbour in a bitmap of the
// frontier. The depths, `reached`, `levels` and `component_edges` equal the
// semi-external search's; parents may differ (any neighbour one level up).
//
// Thread rules: called on the reader's thread, which computes with the
// helpers it starts; a level's helpers are joined before the next level.
// Within a level a vertex's parent and depth are written by one thread
// (the CAS winner, or the thread holding that vertex bottom-up).
#pragma once

#include <cstdint>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/bfs.h"

namespace peregrine::graph::detail {

// REQUIRES: reader.kept(); r holds the root alone (parent, depth, reached).
void bfs_over_kept_lists(const Graph& graph, const AdjacencyReader& reader, bool may_go_bottom_up, uint32_t threads,
                         BfsResult& r);

}  // namespace peregrine::graph::detail
