// Semi-external PageRank by power iteration (pull form).
//
// Each iteration is one sequential sweep of the adjacency file:
//   next[v] = (1-d)/n + d * (dangling/n + sum over neighbours u of pr[u]/deg(u))
// where dangling is the rank held by vertices without edges, spread evenly
// so that ranks keep summing to 1. Stops after max_iterations or when the
// L1 change of an iteration falls below epsilon. Rank vectors live in memory;
// runs on the calling (IO) thread.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct PagerankOptions {
  double damping = 0.85;
  uint32_t max_iterations = 20;
  double epsilon = 1e-8;  // L1 change that counts as converged; 0 runs all iterations
};

struct PagerankResult {
  std::vector<double> rank;
  uint32_t iterations = 0;
  double last_delta = 0;  // L1 change of the last iteration
};

Expected<PagerankResult> run_pagerank(const Graph& graph, AdjacencyReader& reader, const PagerankOptions& options);

}  // namespace peregrine::graph
