#include "peregrine/graph/sssp.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <string>

#include "sssp_kept.h"
#include "thread_team.h"

namespace peregrine::graph {

namespace {

constexpr uint64_t kKeptDeltaDivisor = 128;

// The semi-external rounds (and the kept lists' fallback when the ring of
// bins would be too large): one read_lists() batch per round.
Status settle_buckets(AdjacencyReader& reader, bool weighted, SsspResult& r) {
  const uint64_t delta = r.delta;
  // The vertices filed at distances [i * delta, (i + 1) * delta), by i: a
  // map, as a small delta and large weights leave most buckets between
  // the filled ones empty. Settled buckets are erased from the front.
  std::map<uint64_t, std::vector<Vertex>> buckets;
  buckets[0].push_back(r.root);
  std::vector<Vertex> round;
  while (!buckets.empty()) {
    const auto current = buckets.begin();
    const uint64_t index = current->first;
    bool settled_any = false;
    // Rounds until no relaxation files a vertex in this bucket again.
    while (!current->second.empty()) {
      round.clear();
      for (Vertex v : current->second)
        if (r.distance[v] / delta == index) round.push_back(v);
      current->second.clear();
      if (round.empty()) break;
      settled_any = true;
      ++r.rounds;
      auto relax = [&](Vertex v, std::span<const Vertex> nbrs, auto weight_of) {
        const uint64_t dv = r.distance[v];
        for (size_t i = 0; i < nbrs.size(); ++i) {
          const Vertex w = nbrs[i];
          const uint64_t dw = dv + weight_of(i);
          if (dw < r.distance[w]) {
            r.distance[w] = dw;
            ++r.relaxations;
            buckets[dw / delta].push_back(w);
          }
        }
      };
      Status st =
          weighted ? reader.read_lists(round,
                                       [&](Vertex v, std::span<const Vertex> nbrs, std::span<const uint32_t> weights) {
                                         relax(v, nbrs, [&](size_t i) { return uint64_t{weights[i]}; });
                                       })
                   : reader.read_lists(round, [&](Vertex v, std::span<const Vertex> nbrs) {
                       relax(v, nbrs, [](size_t) { return uint64_t{1}; });
                     });
      if (!st) return st;
    }
    if (settled_any) ++r.buckets;
    buckets.erase(current);
  }
  return Status::ok();
}

}  // namespace

Expected<SsspResult> run_sssp(const Graph& graph, AdjacencyReader& reader, uint64_t root, const SsspOptions& options) {
  const uint64_t n = graph.num_vertices();
  if (root >= n)
    return Status::error(EINVAL, "root " + std::to_string(root) + " out of range: graph " + graph.dir.string() +
                                     " has " + std::to_string(n) + " vertices (0.." + std::to_string(n - 1) + ")");
  const bool weighted = graph.weighted();
  if (weighted && !reader.reads_weights())
    return Status::error(EINVAL, graph.dir.string() + ": a weighted graph's sssp needs a reader of its weights");
  if (Status st = reader.keep_if_fits(); !st) return st;
  const uint64_t max_weight = weighted ? std::max<uint64_t>(1, graph.meta.max_weight) : 1;
  // Read from the file, every round costs a read of its lists: wide
  // buckets. In memory a round costs little, and narrow buckets relax
  // fewer edges twice (GAP runs its kron graphs with 2 for weights to 255).
  const uint64_t delta = options.delta != 0 ? options.delta
                         : reader.kept()    ? std::max<uint64_t>(1, max_weight / kKeptDeltaDivisor)
                                            : max_weight;
  SsspResult r;
  r.delta = delta;
  r.root = static_cast<Vertex>(root);
  r.distance.assign(n, SsspResult::kUnreached);
  r.distance[root] = 0;
  if (reader.kept() && detail::ring_slots(max_weight, delta) <= detail::kMaxRingSlots)
    detail::sssp_over_kept_lists(reader, weighted, max_weight, detail::resolve_threads(options.threads), r);
  else if (Status st = settle_buckets(reader, weighted, r); !st)
    return st;
  for (uint64_t d : r.distance) {
    if (d == SsspResult::kUnreached) continue;
    ++r.reached;
    r.max_distance = std::max(r.max_distance, d);
  }
  return r;
}

}  // namespace peregrine::graph
