#include "peregrine/graph/tc.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <utility>

namespace peregrine::graph {
namespace {

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

// Lists kept in memory, one after another.
struct Lists {
  std::vector<Vertex> owner;
  std::vector<uint64_t> offsets{0};
  std::vector<Vertex> entries;

  void clear() {
    owner.clear();
    offsets.assign(1, 0);
    entries.clear();
  }
  size_t size() const { return owner.size(); }
  std::span<const Vertex> list(size_t i) const {
    return {entries.data() + offsets[i], offsets[i + 1] - offsets[i]};
  }
};

// One batch of vertices: their higher-ranked neighbours (the lists, in
// the order of `vertices`), and for each such neighbour v the batch
// vertices that named it.
struct Batch {
  std::vector<Vertex> vertices;  // ascending
  Lists higher;
  std::vector<Vertex> named;            // distinct neighbours, ascending
  std::vector<uint64_t> namer_offsets;  // per named vertex, into namers
  std::vector<uint32_t> namers;         // indices into vertices
};

void index_named(Batch& b) {
  std::vector<std::pair<Vertex, uint32_t>> pairs;
  pairs.reserve(b.higher.entries.size());
  for (uint32_t i = 0; i < b.vertices.size(); ++i)
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
// a higher-ranked neighbour of the list at hand) and its count.
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
      std::atomic_ref<uint64_t>((*per_vertex)[b.vertices[i]]).fetch_add(found, std::memory_order_relaxed);
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
  const uint32_t threads = std::max<uint32_t>(
      1, options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency()));
  TcResult r;
  std::vector<uint64_t>* per_vertex = nullptr;
  if (options.per_vertex) {
    r.per_vertex.assign(n, 0);
    per_vertex = &r.per_vertex;
  }
  std::vector<Counter> counters(threads);
  for (Counter& c : counters) c.mark.assign(n, 0);
  // Lists that arrived in pieces, until their last piece.
  std::unordered_map<Vertex, std::vector<Vertex>> partial;
  Batch b;
  Lists middles;                   // N+(v) of a chunk of named vertices
  std::vector<size_t> middle_at;   // their indices in b.named
  std::vector<Vertex> to_read;

  uint64_t next = 0;
  while (next < n) {
    // A vertex can be the lowest corner of a triangle only with two
    // neighbours or more.
    b.vertices.clear();
    uint64_t entries = 0;
    for (; next < n && (b.vertices.empty() || entries + graph.degree(next) <= options.batch_entries); ++next) {
      if (graph.degree(next) < 2) continue;
      b.vertices.push_back(static_cast<Vertex>(next));
      entries += graph.degree(next);
    }
    if (b.vertices.empty()) break;
    // The batch's lists, each piece's higher-ranked part kept in place.
    std::vector<std::vector<Vertex>> higher(b.vertices.size());
    to_read = b.vertices;
    Status st = reader.read_lists(to_read, [&](Vertex u, std::span<const Vertex> nbrs) {
      const auto it = std::lower_bound(b.vertices.begin(), b.vertices.end(), u);
      std::vector<Vertex>& h = higher[static_cast<size_t>(it - b.vertices.begin())];
      for (Vertex w : nbrs)
        if (rank[w] > rank[u]) h.push_back(w);
    });
    if (!st) return st;
    ++r.batches;
    b.higher.clear();
    for (size_t i = 0; i < higher.size(); ++i) {
      b.higher.owner.push_back(b.vertices[i]);
      b.higher.entries.insert(b.higher.entries.end(), higher[i].begin(), higher[i].end());
      b.higher.offsets.push_back(b.higher.entries.size());
    }
    higher = {};
    index_named(b);

    // The named vertices' lists, a chunk of about batch_entries at a time:
    // read (the IO thread), then counted on every thread.
    size_t first = 0;
    while (first < b.named.size()) {
      size_t last = first;
      uint64_t chunk = 0;
      for (; last < b.named.size() && (last == first || chunk + graph.degree(b.named[last]) <= options.batch_entries);
           ++last)
        chunk += graph.degree(b.named[last]);
      middles.clear();
      middle_at.clear();
      auto keep = [&](Vertex v, std::span<const Vertex> nbrs) {
        middles.owner.push_back(v);
        for (Vertex w : nbrs)
          if (rank[w] > rank[v]) middles.entries.push_back(w);
        middles.offsets.push_back(middles.entries.size());
        middle_at.push_back(
            static_cast<size_t>(std::lower_bound(b.named.begin() + first, b.named.begin() + last, v) - b.named.begin()));
      };
      to_read.assign(b.named.begin() + first, b.named.begin() + last);
      st = reader.read_lists(to_read, [&](Vertex v, std::span<const Vertex> nbrs) {
        const uint64_t degree = graph.degree(v);
        if (nbrs.size() == degree) return keep(v, nbrs);
        std::vector<Vertex>& acc = partial[v];
        acc.insert(acc.end(), nbrs.begin(), nbrs.end());
        if (acc.size() < degree) return;
        std::vector<Vertex> whole = std::move(acc);
        partial.erase(v);
        keep(v, whole);
      });
      if (!st) return st;
      if (!partial.empty())
        return Status::error(EIO, "adjacency list of vertex " + std::to_string(partial.begin()->first) +
                                      " ended short of its degree");
      std::atomic<size_t> next_item{0};
      auto work = [&](Counter& c) {
        constexpr size_t kItems = 64;  // taken at a time: hubs and leaves mix
        for (;;) {
          const size_t from = next_item.fetch_add(kItems, std::memory_order_relaxed);
          if (from >= middles.size()) return;
          const size_t to = std::min(from + kItems, middles.size());
          for (size_t k = from; k < to; ++k) count_at(b, middle_at[k], middles.list(k), c, per_vertex);
        }
      };
      std::vector<std::thread> helpers;
      for (uint32_t t = 1; t < threads && middles.size() > 1; ++t) helpers.emplace_back(work, std::ref(counters[t]));
      work(counters[0]);
      for (std::thread& h : helpers) h.join();
      first = last;
    }
  }
  for (const Counter& c : counters) r.triangles += c.triangles;
  return r;
}

}  // namespace peregrine::graph
