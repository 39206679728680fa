#include "peregrine/graph/kcore.h"

#include <cerrno>
#include <limits>

namespace peregrine::graph {

Expected<KcoreResult> run_kcore(const Graph& graph, AdjacencyReader& reader) {
  constexpr uint32_t kAlive = std::numeric_limits<uint32_t>::max();
  if (graph.directed())
    return Status::error(EINVAL, "k-core needs an undirected graph; " + graph.dir.string() +
                                     " is directed (import it without --directed)");
  const uint64_t n = graph.num_vertices();
  KcoreResult r;
  r.core.assign(n, kAlive);
  std::vector<uint32_t> deg(n);
  for (uint64_t v = 0; v < n; ++v) deg[v] = static_cast<uint32_t>(graph.degree(v));

  // The vertices not yet peeled, compacted at every scan: most vertices
  // leave at small k, so later scans are far shorter than n.
  std::vector<Vertex> alive(n);
  for (uint64_t v = 0; v < n; ++v) alive[v] = static_cast<Vertex>(v);
  uint32_t k = 0;
  std::vector<Vertex> frontier;
  std::vector<Vertex> next;
  while (!alive.empty()) {
    // One scan collects the vertices already at or below k; if there are
    // none, jump k to the smallest remaining degree and collect again.
    frontier.clear();
    uint32_t min_deg = kAlive;
    size_t kept = 0;
    for (Vertex v : alive) {
      if (r.core[v] != kAlive) continue;
      alive[kept++] = v;
      if (deg[v] <= k) frontier.push_back(v);
      min_deg = std::min(min_deg, deg[v]);
    }
    alive.resize(kept);
    if (alive.empty()) break;
    if (frontier.empty()) {
      k = min_deg;
      continue;
    }
    while (!frontier.empty()) {
      for (Vertex v : frontier) r.core[v] = k;
      next.clear();
      Status st = reader.read_lists(frontier, [&](Vertex, std::span<const Vertex> nbrs) {
        // Only deg[] is touched per edge (one cache miss, not two): a
        // peeled vertex keeps the degree it had when peeled, which is at
        // most its core number <= k, and an unpeeled vertex at or below k
        // is already queued; so deg[w] > k means "alive and not queued".
        for (Vertex w : nbrs) {
          if (deg[w] > k && --deg[w] == k) next.push_back(w);
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
