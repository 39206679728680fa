// --validate: checks a semi-external result against the in-memory reference
// on the same graph. Each returns ok or an error naming the first vertex
// that disagrees.
// Thread rules: pure functions; any thread.
#pragma once

#include "peregrine/graph/bc.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/memory_graph.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/graph/sssp.h"
#include "peregrine/graph/tc.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

// The Graph500 BFS rules: (1) the root is its own parent; (2) the parent
// links form a tree rooted at root (no cycles) whose every edge is a graph
// edge; (3) tree depths equal true BFS levels, hence every graph edge joins
// levels that differ by at most one and tree edges join levels differing by
// exactly one; (4) exactly the root's component is reached.
Status validate_bfs(const MemoryGraph& g, const BfsResult& r);
// Every distance equal to Dijkstra's, the same vertices reached.
Status validate_sssp(const MemoryGraph& g, const SsspResult& r);
Status validate_cc(const MemoryGraph& g, const CcResult& r);
Status validate_kcore(const MemoryGraph& g, const KcoreResult& r);
// Every score within a relative 1e-9 of Brandes' (sums of doubles in
// another order).
inline constexpr double kBcTolerance = 1e-9;
Status validate_bc(const MemoryGraph& g, const BcResult& r);
// The total, and the per-vertex counts if the result has them.
Status validate_tc(const MemoryGraph& g, const TcResult& r);
// L1 distance to the reference after the same number of iterations.
inline constexpr double kPagerankTolerance = 1e-6;
Status validate_pagerank(const MemoryGraph& g, const PagerankResult& r, double damping, double* l1_out = nullptr);

}  // namespace peregrine::graph
