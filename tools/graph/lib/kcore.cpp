#include "peregrine/graph/kcore.h"

#include <limits>

namespace peregrine::graph {

Expected<KcoreResult> run_kcore(const Graph& graph, AdjacencyReader& reader) {
  constexpr uint32_t kAlive = std::numeric_limits<uint32_t>::max();
  const uint64_t n = graph.num_vertices();
  KcoreResult r;
  r.core.assign(n, kAlive);
  std::vector<uint32_t> deg(n);
  for (uint64_t v = 0; v < n; ++v) deg[v] = static_cast<uint32_t>(graph.degree(v));

  uint64_t remaining = n;
  uint32_t k = 0;
  std::vector<Vertex> frontier;
  std::vector<Vertex> next;
  while (remaining > 0) {
    // One scan collects the vertices already at or below k; if there are
    // none, jump k to the smallest remaining degree and collect again.
    frontier.clear();
    uint32_t min_deg = kAlive;
    for (uint64_t v = 0; v < n; ++v) {
      if (r.core[v] != kAlive) continue;
      if (deg[v] <= k) frontier.push_back(static_cast<Vertex>(v));
      min_deg = std::min(min_deg, deg[v]);
    }
    if (frontier.empty()) {
      k = min_deg;
      continue;
    }
    while (!frontier.empty()) {
      for (Vertex v : frontier) r.core[v] = k;
      remaining -= frontier.size();
      next.clear();
      Status st = reader.read_lists(frontier, [&](Vertex, std::span<const Vertex> nbrs) {
        for (Vertex w : nbrs) {
          // A degree at or below k is already queued: leave it alone.
          if (r.core[w] == kAlive && deg[w] > k) {
            if (--deg[w] == k) next.push_back(w);
          }
        }
      });
      if (!st) return st;
      ++r.batches;
      frontier.swap(next);
    }
    r.max_core = k;
    ++k;
  }
  return r;
}

}  // namespace peregrine::graph
