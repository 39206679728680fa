#include "peregrine/graph/bfs.h"

#include <cerrno>
#include <unordered_set>

#include "peregrine/graph/rng.h"

namespace peregrine::graph {

Expected<BfsResult> run_bfs(const Graph& graph, AdjacencyReader& reader, uint64_t root) {
  const uint64_t n = graph.num_vertices();
  if (root >= n)
    return Status::error(EINVAL, "root " + std::to_string(root) + " out of range: graph " + graph.dir.string() +
                                     " has " + std::to_string(n) + " vertices (0.." + std::to_string(n - 1) + ")");
  BfsResult r;
  r.root = static_cast<Vertex>(root);
  r.parent.assign(n, -1);
  r.parent[root] = static_cast<int64_t>(root);
  r.depth.assign(n, BfsResult::kUnreached);
  r.depth[root] = 0;
  std::vector<Vertex> frontier{r.root};
  std::vector<Vertex> next;
  uint64_t degree_sum = graph.degree(root);
  r.reached = 1;
  while (!frontier.empty()) {
    next.clear();
    Status st = reader.read_lists(frontier, [&](Vertex v, std::span<const Vertex> nbrs) {
      for (Vertex w : nbrs) {
        if (r.parent[w] < 0) {
          r.parent[w] = v;
          r.depth[w] = static_cast<uint32_t>(r.levels + 1);
          next.push_back(w);
        }
      }
    });
    if (!st) return st;
    ++r.levels;
    for (Vertex w : next) degree_sum += graph.degree(w);
    r.reached += next.size();
    frontier.swap(next);
  }
  r.component_edges = graph.directed() ? degree_sum : degree_sum / 2;
  return r;
}

Vertex default_bfs_root(const Graph& graph) {
  uint64_t best = 0;
  for (uint64_t v = 1; v < graph.num_vertices(); ++v)
    if (graph.degree(v) > graph.degree(best)) best = v;
  return static_cast<Vertex>(best);
}

std::vector<Vertex> pick_bfs_roots(const Graph& graph, Vertex first, uint32_t count) {
  const uint64_t n = graph.num_vertices();
  std::vector<Vertex> roots;
  if (count == 0) return roots;
  roots.push_back(first);
  std::unordered_set<Vertex> used{first};
  uint64_t with_edges = 0;
  for (uint64_t v = 0; v < n; ++v) with_edges += graph.degree(v) > 0;
  if (graph.degree(first) == 0) ++with_edges;              // `first` is used even if isolated
  CounterRng rng(graph.meta.seed, 0x626673726f6f7473ULL);  // "bfsroots"
  while (roots.size() < count && roots.size() < with_edges) {
    auto v = static_cast<Vertex>(rng.next() % n);
    if (graph.degree(v) == 0 || !used.insert(v).second) continue;
    roots.push_back(v);
  }
  return roots;
}

}  // namespace peregrine::graph
