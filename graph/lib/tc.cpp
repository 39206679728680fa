#include "peregrine/graph/tc.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>

#include "thread_team.h"
#include "whole_lists.h"

namespace peregrine::graph {
namespace {

using detail::Lists;

// Position of every vertex in the order by degree, then id: one array
// lookup per comparison instead of two degree lookups.
std::vector<uint32_t> rank_of(const Graph& g) {
  const uint64_t n = g.num_vertices();
  std::vector<Vertex> order(n);
  std::iota(order.begin(), order.end(), Vertex{0});
  std::sort(order.begin(), order.end(), [&](Vertex a, Vertex b) {
    const uint64_t da = g.degree(a), db = g.degree(b);
    return da < db || (da == db && a < b);
  });
  std::vector<uint32_t> rank(n);
  for (uint64_t i = 0; i < n; ++i) rank[order[i]] = static_cast<uint32_t>(i);
  return rank;
}

// One batch of vertices: their higher-ranked neighbours (one list each,
// `higher.owner` the vertex, in the order the lists completed), and for
// each such neighbour v the batch vertices that named it.
struct Batch {
  Lists higher;
  std::vector<Vertex> named;            // distinct neighbours, ascending
  std::vector<uint64_t> namer_offsets;  // per named vertex, into namers
  std::vector<uint32_t> namers;         // indices into higher
};

void index_named(Batch& b) {
  std::vector<std::pair<Vertex, uint32_t>> pairs;
  pairs.reserve(b.higher.entries.size());
  for (uint32_t i = 0; i < b.higher.size(); ++i)
    for (Vertex v : b.higher.list(i)) pairs.emplace_back(v, i);
  std::sort(pairs.begin(), pairs.end());
  b.named.clear();
  b.namer_offsets.assign(1, 0);
  b.namers.clear();
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (k != 0 && pairs[k].first != pairs[k - 1].first) b.namer_offsets.push_back(b.namers.size());
    if (k == 0 || pairs[k].first != pairs[k - 1].first) b.named.push_back(pairs[k].first);
    b.namers.push_back(pairs[k].second);
  }
  if (!pairs.empty()) b.namer_offsets.push_back(b.namers.size());
}

// What one counting thread keeps: a mark per vertex (mark[w] == stamp: w is
// a higher-ranked neighbour of the list at hand) and its count. Kept
// Padded: its stamp and count change for every vertex it intersects.
struct Counter {
  std::vector<uint32_t> mark;
  uint32_t stamp = 0;
  uint64_t triangles = 0;
};

// Every triangle u < v < w whose lowest corner u is in the batch and whose
// middle one is v: w in N+(v) (`higher_v`) and in N+(u).
void count_at(const Batch& b, size_t named_index, std::span<const Vertex> higher_v, Counter& c,
              std::vector<uint64_t>* per_vertex) {
  if (++c.stamp == 0) {  // wrapped: no mark may look current
    std::fill(c.mark.begin(), c.mark.end(), 0);
    c.stamp = 1;
  }
  for (Vertex w : higher_v) c.mark[w] = c.stamp;
  const Vertex v = b.named[named_index];
  for (uint64_t j = b.namer_offsets[named_index]; j < b.namer_offsets[named_index + 1]; ++j) {
    const uint32_t i = b.namers[j];
    uint64_t found = 0;
    if (per_vertex == nullptr) {
      for (Vertex w : b.higher.list(i)) found += c.mark[w] == c.stamp;
    } else {
      for (Vertex w : b.higher.list(i)) {
        if (c.mark[w] != c.stamp) continue;
        ++found;
        std::atomic_ref<uint64_t>((*per_vertex)[w]).fetch_add(1, std::memory_order_relaxed);
      }
      std::atomic_ref<uint64_t>((*per_vertex)[b.higher.owner[i]]).fetch_add(found, std::memory_order_relaxed);
      std::atomic_ref<uint64_t>((*per_vertex)[v]).fetch_add(found, std::memory_order_relaxed);
    }
    c.triangles += found;
  }
}

}  // namespace

Expected<TcResult> run_tc(const Graph& graph, AdjacencyReader& reader, const TcOptions& options) {
  if (graph.directed())
    return Status::error(EINVAL, "triangle counting needs an undirected graph; " + graph.dir.string() +
                                     " is directed (import it without --directed)");
  const uint64_t n = graph.num_vertices();
  const std::vector<uint32_t> rank = rank_of(graph);
  const uint32_t threads = detail::resolve_threads(options.threads);
  TcResult r;
  std::vector<uint64_t>* per_vertex = nullptr;
  if (options.per_vertex) {
    r.per_vertex.assign(n, 0);
    per_vertex = &r.per_vertex;
  }
  std::vector<detail::Padded<Counter>> counters(threads);
  detail::ThreadTeam team(threads);
  for (auto& c : counters) c.value.mark.assign(n, 0);
  auto higher_ranked = [&rank](Vertex owner, Vertex w) { return rank[w] > rank[owner]; };
  Batch b;
  std::vector<Vertex> lowest;

  uint64_t next = 0;
  while (next < n) {
    // A vertex can be the lowest corner of a triangle only with two
    // neighbours or more.
    lowest.clear();
    uint64_t entries = 0;
    for (; next < n && (lowest.empty() || entries + graph.degree(next) <= options.batch_entries); ++next) {
      if (graph.degree(next) < 2) continue;
      lowest.push_back(static_cast<Vertex>(next));
      entries += graph.degree(next);
    }
    if (lowest.empty()) break;
    // The batch's lists, their higher-ranked parts kept.
    b.higher.clear();
    Status st = detail::read_whole_lists(graph, reader, lowest, options.batch_entries, higher_ranked,
                                         [&](const Lists& chunk) {
                                           for (size_t i = 0; i < chunk.size(); ++i) {
                                             const auto list = chunk.list(i);
                                             b.higher.add(chunk.owner[i], list, [](Vertex, Vertex) { return true; });
                                           }
                                         });
    if (!st) return st;
    ++r.batches;
    index_named(b);

    // The named vertices' lists, a chunk of about batch_entries at a time:
    // read on this thread, then counted on every thread.
    st = detail::read_whole_lists(graph, reader, b.named, options.batch_entries, higher_ranked,
                                  [&](const Lists& middles) {
                                    team.for_each(middles.size(), [&](size_t k, uint32_t t) {
                                      const auto at = std::lower_bound(b.named.begin(), b.named.end(),
                                                                       middles.owner[k]);
                                      count_at(b, static_cast<size_t>(at - b.named.begin()), middles.list(k),
                                               counters[t].value, per_vertex);
                                    });
                                  });
    if (!st) return st;
  }
  for (const auto& c : counters) r.triangles += c.value.triangles;
  return r;
}

}  // namespace peregrine::graph
