// Semi-external PageRank by power iteration (pull form).
//
// Each iteration is one sequential sweep of the adjacency file:
//   next[v] = (1-d)/n + d * (dangling/n + sum over in-neighbours u of pr[u]/outdeg(u))
// where dangling is the rank held by vertices without out-edges, spread evenly
// so that ranks keep summing to 1. Stops after max_iterations or when the
// L1 change of an iteration falls below epsilon. Rank vectors live in memory.
// When the reader keeps the lists in memory, the sweeps after its one read
// sum the ranks on `threads` threads, each vertex's sum by one thread, so
// the ranks do not depend on the thread count.
//
// Thread rules: runs on the calling (IO) thread; over kept lists, a team
// of helper threads started once for the run (they wait between sweeps)
// write disjoint vertices' next ranks and contributions, and disjoint
// blocks' partial sums.
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
  uint32_t threads = 1;   // threads that sum over kept lists; 0: one per CPU
};

struct PagerankResult {
  std::vector<double> rank;
  uint32_t iterations = 0;
  double last_delta = 0;  // L1 change of the last iteration
};

// `graph` gives the out-degrees. The sweep pulls over in-lists: `reader`'s
// lists on an undirected graph; on a directed graph pass in_reader, the
// reader of the transpose (open_transpose), whose lists are the in-lists.
Expected<PagerankResult> run_pagerank(const Graph& graph, AdjacencyReader& reader, const PagerankOptions& options,
                                      AdjacencyReader* in_reader = nullptr);

}  // namespace peregrine::graph
