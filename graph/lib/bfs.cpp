#include "peregrine/graph/bfs.h"

#include <cerrno>
#include <unordered_set>

#include "bfs_kept.h"
#include "peregrine/graph/rng.h"
#include "thread_team.h"

namespace peregrine::graph {

Expected<BfsResult> run_bfs(const Graph& graph, AdjacencyReader& reader, uint64_t root, BfsDirection direction,
                            uint32_t threads) {
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
  r.reached = 1;
  const bool may_go_bottom_up = direction == BfsDirection::kOptimising && !graph.directed();
  if (Status st = reader.keep_if_fits(); !st) return st;
  if (reader.kept()) {
    detail::bfs_over_kept_lists(graph, reader, may_go_bottom_up, detail::resolve_threads(threads), r);
    return r;
  }
  std::vector<Vertex> frontier{r.root};
  std::vector<Vertex> next;
  uint64_t degree_sum = graph.degree(root);
  // Entries in the lists of the vertices not reached yet.
  uint64_t unreached_entries = graph.meta.adjacency_entries - graph.degree(root);
  uint64_t frontier_entries = graph.degree(root);
  while (!frontier.empty()) {
    next.clear();
    const uint32_t level = static_cast<uint32_t>(r.levels);
    Status st;
    if (may_go_bottom_up && frontier_entries > unreached_entries) {
      // Bottom-up: every unreached vertex with edges looks for a neighbour
      // in the frontier. A list may come in pieces: once a piece found a
      // parent, the rest of the list is skipped.
      std::vector<Vertex> unreached;
      for (uint64_t v = 0; v < n; ++v)
        if (r.parent[v] < 0 && graph.degree(v) != 0) unreached.push_back(static_cast<Vertex>(v));
      st = reader.read_lists(unreached, [&](Vertex v, std::span<const Vertex> nbrs) {
        if (r.parent[v] >= 0) return;
        for (Vertex w : nbrs) {
          if (r.depth[w] != level) continue;
          r.parent[v] = w;
          r.depth[v] = level + 1;
          next.push_back(v);
          return;
        }
      });
      ++r.bottom_up_levels;
    } else {
      st = reader.read_lists(frontier, [&](Vertex v, std::span<const Vertex> nbrs) {
        for (Vertex w : nbrs) {
          if (r.parent[w] < 0) {
            r.parent[w] = v;
            r.depth[w] = level + 1;
            next.push_back(w);
          }
        }
      });
    }
    if (!st) return st;
    ++r.levels;
    frontier_entries = 0;
    for (Vertex w : next) frontier_entries += graph.degree(w);
    degree_sum += frontier_entries;
    unreached_entries -= frontier_entries;
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
