#include "peregrine/graph/cc.h"

#include <algorithm>

namespace peregrine::graph {
namespace {

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
  void unite(Vertex a, Vertex b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (a < b)
      parent_[b] = a;
    else
      parent_[a] = b;
  }

 private:
  std::vector<Vertex> parent_;
};

}  // namespace

Expected<CcResult> run_cc(const Graph& graph, AdjacencyReader& reader) {
  const uint64_t n = graph.num_vertices();
  MinRootSets sets(n);
  // An undirected edge is in both lists: one copy is enough. A directed
  // graph's arcs, each seen once in its out-list, join weak components.
  const bool both_copies = !graph.directed();
  Status st = reader.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
    for (Vertex w : nbrs)
      if (!both_copies || w > v) sets.unite(v, w);
  });
  if (!st) return st;
  CcResult r;
  r.rounds = 1;
  r.label.resize(n);
  for (uint64_t v = 0; v < n; ++v) r.label[v] = sets.find(static_cast<Vertex>(v));
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
