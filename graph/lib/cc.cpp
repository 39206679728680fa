#include "peregrine/graph/cc.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace peregrine::graph {
namespace {

// Afforest's neighbour rounds: each vertex is first linked to this many of
// its neighbours, which already joins most of a large component.
constexpr uint32_t kSampledNeighbours = 2;
// Vertices looked at to tell the largest component after the sampling.
constexpr uint64_t kGiantSamples = 1024;

// Union-find whose roots are their set's smallest vertex: a union links the
// larger root under the smaller, and finds halve their paths.
class MinRootSets {
 public:
  explicit MinRootSets(uint64_t n) : parent_(n) {
    for (uint64_t v = 0; v < n; ++v) parent_[v] = static_cast<Vertex>(v);
  }
  Vertex find(Vertex v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }
  // Unites root `root` with w's set; returns the root of the union.
  Vertex unite_root(Vertex root, Vertex w) {
    const Vertex r = find(w);
    if (r == root) return root;
    if (root < r) {
      parent_[r] = root;
      return root;
    }
    parent_[root] = r;
    return r;
  }
  // Points every vertex at its root, in one ascending pass: a parent is
  // never larger than its child (unions link under the smaller root, finds
  // only shorten paths), so a vertex's parent points at its root already.
  void compress() {
    for (Vertex& p : parent_) p = parent_[p];
  }
  // After compress(): every vertex's root.
  const std::vector<Vertex>& roots() const { return parent_; }
  std::vector<Vertex> take_roots() && { return std::move(parent_); }
  void unite(Vertex v, Vertex w) { unite_root(find(v), w); }
  // Brings v's parent towards the cache for a find soon after.
  void prefetch(Vertex v) const { __builtin_prefetch(&parent_[v]); }

 private:
  std::vector<Vertex> parent_;
};

// Unions taken kDepth behind their arrival, both ends' parents prefetched
// as they arrive. A find's first load is a cache miss into a table of 4
// bytes a vertex far larger than the cache, and the sweep's unions, taken
// as they come, waited for those misses one at a time: 69% of the
// sampling's time on one load (scale 20, tmpfs members). Queued, the
// misses of the next kDepth unions are in flight together. The order of
// unions does not change the sets, nor their roots (each set's smallest
// vertex).
class PrefetchedUnions {
 public:
  // Unions still queued when it goes are dropped: flush() first.
  explicit PrefetchedUnions(MinRootSets& sets) : sets_(sets) {}
  PrefetchedUnions(const PrefetchedUnions&) = delete;
  PrefetchedUnions& operator=(const PrefetchedUnions&) = delete;

  void add(Vertex v, Vertex w) {
    sets_.prefetch(v);
    sets_.prefetch(w);
    Pair& slot = queue_[next_];
    if (queued_ == kDepth) {
      sets_.unite(slot.v, slot.w);
    } else {
      ++queued_;
    }
    slot = {v, w};
    next_ = (next_ + 1) % kDepth;
  }
  void add_all(Vertex v, std::span<const Vertex> nbrs) {
    for (Vertex w : nbrs) add(v, w);
  }
  // Takes every queued union; the sets are whole again.
  void flush() {
    // The oldest sits at next_ when the queue is full, at 0 otherwise.
    const uint32_t first = queued_ == kDepth ? next_ : 0;
    for (uint32_t i = 0; i < queued_; ++i) {
      const Pair& p = queue_[(first + i) % kDepth];
      sets_.unite(p.v, p.w);
    }
    queued_ = 0;
    next_ = 0;
  }

 private:
  static constexpr uint32_t kDepth = 16;
  struct Pair {
    Vertex v;
    Vertex w;
  };
  MinRootSets& sets_;
  std::array<Pair, kDepth> queue_{};
  uint32_t queued_ = 0;
  uint32_t next_ = 0;  // where the next union goes (the oldest, once full)
};

// The root most of an even sample of the vertices have: the largest set,
// very likely, when one set holds most vertices.
Vertex most_frequent_root(const std::vector<Vertex>& roots) {
  std::unordered_map<Vertex, uint32_t> count;
  const uint64_t step = std::max<uint64_t>(1, roots.size() / kGiantSamples);
  Vertex best = 0;
  uint32_t best_count = 0;
  for (uint64_t v = 0; v < roots.size(); v += step) {
    const Vertex root = roots[v];
    if (const uint32_t c = ++count[root]; c > best_count) {
      best_count = c;
      best = root;
    }
  }
  return best;
}

}  // namespace

Expected<CcResult> run_cc(const Graph& graph, AdjacencyReader& reader) {
  const uint64_t n = graph.num_vertices();
  MinRootSets sets(n);
  CcResult r;
  PrefetchedUnions unions(sets);
  if (graph.directed()) {
    // Each arc, seen once in its out-list, joins weak components.
    if (Status st = reader.read_all([&](Vertex v, std::span<const Vertex> nbrs) { unions.add_all(v, nbrs); }); !st)
      return st;
    unions.flush();
    r.rounds = 1;
  } else {
    // 1. Each vertex with its first neighbours (the pieces of a list come
    // in list order; `taken` counts what a vertex's earlier pieces gave).
    std::vector<uint8_t> taken(n, 0);
    Status st = reader.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
      const uint32_t t = taken[v];
      if (t >= kSampledNeighbours) return;
      const size_t m = std::min<size_t>(nbrs.size(), kSampledNeighbours - t);
      unions.add_all(v, nbrs.first(m));
      taken[v] = static_cast<uint8_t>(t + m);
    });
    if (!st) return st;
    unions.flush();
    // 2. Every edge the sampling left out that could join two sets has an
    // end outside the largest set: an undirected edge is in both ends'
    // lists, so the rest of the lists of the vertices outside it are
    // enough, and the largest set's own lists are never read again.
    sets.compress();
    const std::vector<Vertex>& roots = sets.roots();
    const Vertex giant = most_frequent_root(roots);
    std::vector<Vertex> rest;
    for (uint64_t v = 0; v < n; ++v)
      if (roots[v] != giant && graph.degree(v) > kSampledNeighbours) rest.push_back(static_cast<Vertex>(v));
    r.rounds = 1;
    if (!rest.empty()) {
      st = reader.read_lists(rest, [&](Vertex v, std::span<const Vertex> nbrs) { unions.add_all(v, nbrs); });
      if (!st) return st;
      unions.flush();
      r.rounds = 2;
    }
  }
  sets.compress();
  r.label = std::move(sets).take_roots();
  summarize_components(&r);
  return r;
}

void summarize_components(CcResult* r) {
  std::vector<uint64_t> size(r->label.size(), 0);
  for (Vertex l : r->label) ++size[l];
  r->components = 0;
  r->largest = 0;
  for (uint64_t v = 0; v < size.size(); ++v) {
    if (r->label[v] == v) ++r->components;
    r->largest = std::max(r->largest, size[v]);
  }
}

}  // namespace peregrine::graph
