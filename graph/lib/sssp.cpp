#include "peregrine/graph/sssp.h"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <string>

namespace peregrine::graph {

Expected<SsspResult> run_sssp(const Graph& graph, AdjacencyReader& reader, uint64_t root, const SsspOptions& options) {
  const uint64_t n = graph.num_vertices();
  if (root >= n)
    return Status::error(EINVAL, "root " + std::to_string(root) + " out of range: graph " + graph.dir.string() +
                                     " has " + std::to_string(n) + " vertices (0.." + std::to_string(n - 1) + ")");
  const bool weighted = graph.weighted();
  if (weighted && !reader.reads_weights())
    return Status::error(EINVAL, graph.dir.string() + ": a weighted graph's sssp needs a reader of its weights");
  const uint64_t delta =
      options.delta != 0 ? options.delta : std::max<uint64_t>(1, weighted ? graph.meta.max_weight : 1);
  SsspResult r;
  r.delta = delta;
  r.root = static_cast<Vertex>(root);
  r.distance.assign(n, SsspResult::kUnreached);
  r.distance[root] = 0;
  // buckets[i - first] holds the vertices filed at distances
  // [i * delta, (i + 1) * delta); settled buckets are dropped from the front.
  std::deque<std::vector<Vertex>> buckets(1, std::vector<Vertex>{r.root});
  uint64_t first = 0;
  auto file = [&](Vertex w, uint64_t d) {
    const uint64_t b = d / delta - first;
    if (b >= buckets.size()) buckets.resize(b + 1);
    buckets[b].push_back(w);
  };
  std::vector<Vertex> round;
  while (!buckets.empty()) {
    if (!buckets.front().empty()) {
      ++r.buckets;
      // Rounds until no relaxation files a vertex in this bucket again.
      while (!buckets.front().empty()) {
        round.clear();
        for (Vertex v : buckets.front())
          if (r.distance[v] / delta == first) round.push_back(v);
        buckets.front().clear();
        if (round.empty()) break;
        ++r.rounds;
        auto relax = [&](Vertex v, std::span<const Vertex> nbrs, auto weight_of) {
          const uint64_t dv = r.distance[v];
          for (size_t i = 0; i < nbrs.size(); ++i) {
            const Vertex w = nbrs[i];
            const uint64_t dw = dv + weight_of(i);
            if (dw < r.distance[w]) {
              r.distance[w] = dw;
              ++r.relaxations;
              file(w, dw);
            }
          }
        };
        Status st = weighted ? reader.read_lists(
                                   round,
                                   [&](Vertex v, std::span<const Vertex> nbrs, std::span<const uint32_t> weights) {
                                     relax(v, nbrs, [&](size_t i) { return uint64_t{weights[i]}; });
                                   })
                             : reader.read_lists(round, [&](Vertex v, std::span<const Vertex> nbrs) {
                                 relax(v, nbrs, [](size_t) { return uint64_t{1}; });
                               });
        if (!st) return st;
      }
    }
    buckets.pop_front();
    ++first;
  }
  for (uint64_t d : r.distance) {
    if (d == SsspResult::kUnreached) continue;
    ++r.reached;
    r.max_distance = std::max(r.max_distance, d);
  }
  return r;
}

}  // namespace peregrine::graph
