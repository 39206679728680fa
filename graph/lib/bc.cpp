#include "peregrine/graph/bc.h"

#include <atomic>
#include <cerrno>

#include "thread_team.h"

namespace peregrine::graph {
namespace {

constexpr uint32_t kUnreached = UINT32_MAX;

}  // namespace

Expected<BcResult> run_bc(const Graph& graph, AdjacencyReader& reader, const std::vector<Vertex>& sources,
                          uint32_t threads) {
  const uint64_t n = graph.num_vertices();
  if (Status st = reader.keep_if_fits(); !st) return st;
  threads = detail::resolve_threads(threads);
  detail::ThreadTeam team(reader.kept() ? threads : 1);
  std::vector<detail::Padded<std::vector<Vertex>>> found(threads);  // kept: each thread's part of the next level
  BcResult r;
  r.sources = sources;
  r.score.assign(n, 0.0);
  std::vector<uint32_t> depth(n, kUnreached);
  std::vector<double> sigma(n, 0.0);
  std::vector<double> delta(n, 0.0);
  // Whether a vertex has a successor one level down: only those lists are
  // read again on the way back (a leaf of the search pulls nothing).
  std::vector<uint8_t> has_successor(n, 0);
  std::vector<Vertex> order;  // reached vertices, level by level
  std::vector<size_t> level_start;
  std::vector<Vertex> batch;
  for (Vertex s : sources) {
    if (s >= n)
      return Status::error(EINVAL, "source " + std::to_string(s) + " out of range: graph " + graph.dir.string() +
                                       " has " + std::to_string(n) + " vertices");
    // Forward: levels and path counts.
    order.assign(1, s);
    level_start.assign(1, 0);
    depth[s] = 0;
    sigma[s] = 1.0;
    for (uint32_t d = 0; level_start.back() < order.size(); ++d) {
      const size_t begin = level_start.back();
      level_start.push_back(order.size());
      if (reader.kept()) {
        // A new vertex is claimed once, by compare-and-swap of its depth;
        // path counts are added atomically (whole numbers: exact in any order).
        const uint32_t next = d + 1;
        for (auto& f : found) f.value.clear();
        team.for_each(order.size() - begin, [&](size_t i, uint32_t t) {
          const Vertex v = order[begin + i];
          for (Vertex w : reader.kept_list(v)) {
            std::atomic_ref<uint32_t> depth_w(depth[w]);
            uint32_t seen = depth_w.load(std::memory_order_relaxed);
            if (seen == kUnreached && depth_w.compare_exchange_strong(seen, next, std::memory_order_relaxed)) {
              found[t].value.push_back(w);
              seen = next;
            }
            if (seen == next) {
              std::atomic_ref<double>(sigma[w]).fetch_add(sigma[v], std::memory_order_relaxed);
              has_successor[v] = 1;
            }
          }
        });
        for (const auto& f : found) order.insert(order.end(), f.value.begin(), f.value.end());
        continue;
      }
      batch.assign(order.begin() + static_cast<ptrdiff_t>(begin), order.end());
      Status st = reader.read_lists(batch, [&](Vertex v, std::span<const Vertex> nbrs) {
        for (Vertex w : nbrs) {
          if (depth[w] == kUnreached) {
            depth[w] = d + 1;
            order.push_back(w);
          }
          if (depth[w] == d + 1) {
            sigma[w] += sigma[v];
            has_successor[v] = 1;
          }
        }
      });
      if (!st) return st;
    }
    // Level l is order[level_start[l], level_start[l + 1]).
    const size_t levels = level_start.size() - 1;
    r.levels += levels;
    // Backward: each level pulls from the one below it; the deepest has
    // none.
    for (size_t l = levels - 1; l-- > 0;) {
      batch.clear();
      for (size_t i = level_start[l]; i < level_start[l + 1]; ++i)
        if (has_successor[order[i]]) batch.push_back(order[i]);
      const uint32_t below = static_cast<uint32_t>(l + 1);
      auto pull = [&](Vertex v, std::span<const Vertex> nbrs) {
        double pulled = 0;
        for (Vertex w : nbrs)
          if (depth[w] == below) pulled += (1.0 + delta[w]) / sigma[w];
        delta[v] += sigma[v] * pulled;
      };
      if (reader.kept()) {
        // Each vertex pulls alone, from a level no one writes: as read.
        team.for_each(batch.size(), [&](size_t i, uint32_t) { pull(batch[i], reader.kept_list(batch[i])); });
        continue;
      }
      Status st = reader.read_lists(batch, pull);
      if (!st) return st;
    }
    for (Vertex v : order) {
      if (v != s) r.score[v] += delta[v];
      depth[v] = kUnreached;
      has_successor[v] = 0;
      sigma[v] = 0.0;
      delta[v] = 0.0;
    }
  }
  return r;
}

}  // namespace peregrine::graph
