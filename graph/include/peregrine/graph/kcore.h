// Semi-external k-core decomposition: the core number of every vertex.
//
// Batched peeling: for k = 0, 1, ...: remove every remaining vertex of
// degree <= k (its core number is k), read all their lists in one batch and
// decrement their neighbours' degrees; neighbours that drop to k join the
// next batch of the same k. Degrees and core numbers live in memory; every
// list is read exactly once overall, in frontier-sized random batches, the
// IO pattern G-Store's k-core shows.
//
// Thread rules: runs on the calling (IO) thread.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct KcoreResult {
  std::vector<uint32_t> core;  // core number per vertex
  uint32_t max_core = 0;
  uint64_t batches = 0;  // read_lists() calls
};

// Undirected graphs only (a directed graph is refused with an error).
Expected<KcoreResult> run_kcore(const Graph& graph, AdjacencyReader& reader);

}  // namespace peregrine::graph
