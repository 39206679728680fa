// In-memory reference algorithms, written independently of the
// semi-external ones so that --validate compares two implementations:
// union-find components, Batagelj-Zaversnik bucket peeling for core
// numbers, PageRank power iteration over the in-memory CSR, and a node
// iterator for triangles.
// Thread rules: pure functions; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {

// Component labels: the smallest vertex id of each component (weakly
// connected on a directed graph: union-find ignores the direction).
std::vector<Vertex> reference_components(const MemoryGraph& g);

// Core number of every vertex.
std::vector<uint32_t> reference_core_numbers(const MemoryGraph& g);

// Exactly `iterations` power iterations with the formula of pagerank.h,
// pushing rank along out-lists (so it holds for directed graphs too).
std::vector<double> reference_pagerank(const MemoryGraph& g, double damping, uint32_t iterations);

// Triangles at every vertex (each triangle counts at its three corners),
// by a node iterator over id order with binary-searched closing edges.
std::vector<uint64_t> reference_triangles(const MemoryGraph& g);

// Brandes' unnormalised betweenness from `sources` (each ordered pair
// counted, as bc.h).
std::vector<double> reference_bc(const MemoryGraph& g, const std::vector<Vertex>& sources);

// BFS levels from root (-1 = unreachable).
std::vector<int64_t> reference_bfs_levels(const MemoryGraph& g, uint64_t root);

// Dijkstra's distances from root with a binary heap, over the graph's
// weights (1 each when it has none); -1 = unreachable.
std::vector<int64_t> reference_sssp(const MemoryGraph& g, uint64_t root);

}  // namespace peregrine::graph
