#include "bfs_kept.h"

#include <atomic>
#include <vector>

#include "thread_team.h"

namespace peregrine::graph::detail {
namespace {

// One bit per vertex: in the frontier.
class FrontierBits {
 public:
  explicit FrontierBits(uint64_t n) : words_((n + 63) / 64) {}
  void assign(const std::vector<Vertex>& frontier) {
    std::fill(words_.begin(), words_.end(), 0);
    for (Vertex v : frontier) words_[v / 64] |= uint64_t{1} << (v % 64);
  }
  bool has(Vertex v) const { return (words_[v / 64] >> (v % 64)) & 1; }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace

void bfs_over_kept_lists(const Graph& graph, const AdjacencyReader& reader, bool may_go_bottom_up, uint32_t threads,
                         BfsResult& r) {
  const uint64_t n = graph.num_vertices();
  std::vector<Vertex> frontier{r.root};
  std::vector<Padded<std::vector<Vertex>>> found(threads);  // each thread's part of the next frontier
  FrontierBits in_frontier(n);
  ThreadTeam team(threads);
  uint64_t degree_sum = graph.degree(r.root);
  uint64_t unreached_entries = graph.meta.adjacency_entries - graph.degree(r.root);
  uint64_t frontier_entries = graph.degree(r.root);
  while (!frontier.empty()) {
    const uint32_t next_depth = static_cast<uint32_t>(r.levels) + 1;
    for (auto& f : found) f.value.clear();
    if (may_go_bottom_up && frontier_entries > unreached_entries) {
      in_frontier.assign(frontier);
      team.for_each(n, [&](size_t v, uint32_t t) {
        if (r.parent[v] >= 0 || graph.degree(v) == 0) return;
        for (Vertex w : reader.kept_list(static_cast<Vertex>(v))) {
          if (!in_frontier.has(w)) continue;
          r.parent[v] = w;
          r.depth[v] = next_depth;
          found[t].value.push_back(static_cast<Vertex>(v));
          return;
        }
      });
      ++r.bottom_up_levels;
    } else {
      team.for_each(frontier.size(), [&](size_t i, uint32_t t) {
        const Vertex v = frontier[i];
        for (Vertex w : reader.kept_list(v)) {
          std::atomic_ref<int64_t> parent(r.parent[w]);
          int64_t unset = -1;
          if (parent.load(std::memory_order_relaxed) >= 0 ||
              !parent.compare_exchange_strong(unset, v, std::memory_order_relaxed))
            continue;
          r.depth[w] = next_depth;
          found[t].value.push_back(w);
        }
      });
    }
    ++r.levels;
    frontier.clear();
    for (const auto& f : found) frontier.insert(frontier.end(), f.value.begin(), f.value.end());
    frontier_entries = 0;
    for (Vertex w : frontier) frontier_entries += graph.degree(w);
    degree_sum += frontier_entries;
    unreached_entries -= frontier_entries;
    r.reached += frontier.size();
  }
  r.component_edges = graph.directed() ? degree_sum : degree_sum / 2;
}

}  // namespace peregrine::graph::detail
