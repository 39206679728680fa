#include "peregrine/graph/validate.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

#include "peregrine/graph/reference.h"

namespace peregrine::graph {
namespace {

Status fail(const std::string& what) { return Status::error(EDOM, "validation failed: " + what); }
std::string s(uint64_t x) { return std::to_string(x); }

}  // namespace

Status validate_bfs(const MemoryGraph& g, const BfsResult& r) {
  const uint64_t n = g.num_vertices();
  if (r.parent.size() != n) return fail("parent array has the wrong size");
  if (r.parent[r.root] != r.root) return fail("root " + s(r.root) + " is not its own parent");
  // Depth of every reached vertex along its parent chain; a chain longer
  // than n vertices is a cycle.
  std::vector<int64_t> depth(n, -1);
  depth[r.root] = 0;
  std::vector<uint64_t> chain;
  for (uint64_t v = 0; v < n; ++v) {
    if (r.parent[v] < 0 || depth[v] >= 0) continue;
    chain.clear();
    uint64_t x = v;
    while (depth[x] < 0) {
      chain.push_back(x);
      int64_t p = r.parent[x];
      if (p < 0 || static_cast<uint64_t>(p) >= n)
        return fail("vertex " + s(x) + " has parent " + std::to_string(p) + " which is not a reached vertex");
      if (!g.has_edge(static_cast<uint64_t>(p), x))  // the arc parent -> child (both ways if undirected)
        return fail("tree edge " + std::to_string(p) + "-" + s(x) + " is not in the graph");
      if (chain.size() > n) return fail("parent links of vertex " + s(v) + " form a cycle");
      x = static_cast<uint64_t>(p);
    }
    for (size_t i = chain.size(); i-- > 0;) depth[chain[i]] = depth[r.parent[chain[i]]] + 1;
  }
  auto level = reference_bfs_levels(g, r.root);
  uint64_t reached = 0;
  for (uint64_t v = 0; v < n; ++v) {
    if ((level[v] >= 0) != (r.parent[v] >= 0))
      return fail("vertex " + s(v) +
                  (level[v] >= 0 ? " is in the root's component but was not reached"
                                 : " was reached but is not in the root's component"));
    if (!r.depth.empty()) {
      const int64_t d = r.depth[v] == BfsResult::kUnreached ? -1 : int64_t{r.depth[v]};
      if (d != level[v])
        return fail("vertex " + s(v) + " has reported depth " + std::to_string(d) + " but BFS level " +
                    std::to_string(level[v]));
    }
    if (level[v] >= 0) {
      ++reached;
      if (depth[v] != level[v])
        return fail("vertex " + s(v) + " has tree depth " + std::to_string(depth[v]) + " but BFS level " +
                    std::to_string(level[v]));
    }
  }
  if (reached != r.reached) return fail("reported " + s(r.reached) + " reached vertices, found " + s(reached));
  return Status::ok();
}

Status validate_cc(const MemoryGraph& g, const CcResult& r) {
  auto ref = reference_components(g);
  if (r.label.size() != ref.size()) return fail("label array has the wrong size");
  for (uint64_t v = 0; v < ref.size(); ++v)
    if (r.label[v] != ref[v])
      return fail("vertex " + s(v) + " has component label " + s(r.label[v]) + ", union-find says " + s(ref[v]));
  return Status::ok();
}

Status validate_kcore(const MemoryGraph& g, const KcoreResult& r) {
  auto ref = reference_core_numbers(g);
  if (r.core.size() != ref.size()) return fail("core array has the wrong size");
  for (uint64_t v = 0; v < ref.size(); ++v)
    if (r.core[v] != ref[v])
      return fail("vertex " + s(v) + " has core number " + s(r.core[v]) + ", peeling says " + s(ref[v]));
  return Status::ok();
}

Status validate_bc(const MemoryGraph& g, const BcResult& r) {
  auto ref = reference_bc(g, r.sources);
  if (r.score.size() != ref.size()) return fail("score array has the wrong size");
  for (uint64_t v = 0; v < ref.size(); ++v) {
    if (std::fabs(r.score[v] - ref[v]) <= kBcTolerance * std::max(1.0, std::fabs(ref[v]))) continue;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.17g, Brandes says %.17g", r.score[v], ref[v]);
    return fail("vertex " + s(v) + " has betweenness " + buf);
  }
  return Status::ok();
}

Status validate_sssp(const MemoryGraph& g, const SsspResult& r) {
  const auto ref = reference_sssp(g, r.root);
  if (r.distance.size() != ref.size()) return fail("distance array has the wrong size");
  for (uint64_t v = 0; v < ref.size(); ++v) {
    const int64_t got = r.distance[v] == SsspResult::kUnreached ? -1 : static_cast<int64_t>(r.distance[v]);
    if (got != ref[v])
      return fail("vertex " + s(v) + " has distance " + std::to_string(got) + ", Dijkstra's is " +
                  std::to_string(ref[v]));
  }
  return Status::ok();
}

Status validate_tc(const MemoryGraph& g, const TcResult& r) {
  auto ref = reference_triangles(g);
  uint64_t corners = 0;
  for (uint64_t c : ref) corners += c;
  if (r.triangles != corners / 3)
    return fail("counted " + s(r.triangles) + " triangles, the node iterator finds " + s(corners / 3));
  if (r.per_vertex.empty()) return Status::ok();
  if (r.per_vertex.size() != ref.size()) return fail("per-vertex triangle array has the wrong size");
  for (uint64_t v = 0; v < ref.size(); ++v)
    if (r.per_vertex[v] != ref[v])
      return fail("vertex " + s(v) + " is in " + s(r.per_vertex[v]) + " triangles, the node iterator says " +
                  s(ref[v]));
  return Status::ok();
}

Status validate_pagerank(const MemoryGraph& g, const PagerankResult& r, double damping, double* l1_out) {
  auto ref = reference_pagerank(g, damping, r.iterations);
  if (r.rank.size() != ref.size()) return fail("rank array has the wrong size");
  double l1 = 0;
  for (uint64_t v = 0; v < ref.size(); ++v) l1 += std::fabs(r.rank[v] - ref[v]);
  if (l1_out) *l1_out = l1;
  if (!(l1 <= kPagerankTolerance)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", l1);
    return fail(std::string("PageRank differs from power iteration by L1 ") + buf + " > 1e-6");
  }
  return Status::ok();
}

}  // namespace peregrine::graph
