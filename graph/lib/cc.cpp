#include "peregrine/graph/cc.h"

#include <algorithm>
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
  // v's root found once for a run of neighbours, and followed through the
  // unions: one find an edge, not two.
  void unite_all(Vertex v, std::span<const Vertex> nbrs) {
    if (nbrs.empty()) return;
    Vertex root = find(v);
    for (Vertex w : nbrs) root = unite_root(root, w);
  }

 private:
  std::vector<Vertex> parent_;
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
  if (graph.directed()) {
    // Each arc, seen once in its out-list, joins weak components.
    if (Status st = reader.read_all([&](Vertex v, std::span<const Vertex> nbrs) { sets.unite_all(v, nbrs); }); !st)
      return st;
    r.rounds = 1;
  } else {
    // 1. Each vertex with its first neighbours (the pieces of a list come
    // in list order; `taken` counts what a vertex's earlier pieces gave).
    std::vector<uint8_t> taken(n, 0);
    Status st = reader.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
      const uint32_t t = taken[v];
      if (t >= kSampledNeighbours) return;
      const size_t m = std::min<size_t>(nbrs.size(), kSampledNeighbours - t);
      sets.unite_all(v, nbrs.first(m));
      taken[v] = static_cast<uint8_t>(t + m);
    });
    if (!st) return st;
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
      st = reader.read_lists(rest, [&](Vertex v, std::span<const Vertex> nbrs) { sets.unite_all(v, nbrs); });
      if (!st) return st;
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
