#include "peregrine/graph/cc.h"

#include <algorithm>

namespace peregrine::graph {

Expected<CcResult> run_cc(const Graph& graph, AdjacencyReader& reader, AdjacencyReader* in_reader) {
  const uint64_t n = graph.num_vertices();
  CcResult r;
  r.label.resize(n);
  for (uint64_t v = 0; v < n; ++v) r.label[v] = static_cast<Vertex>(v);
  std::vector<uint8_t> queued(n, 0);
  std::vector<Vertex> next;

  // Pull the smallest label into v, then push it to the neighbours: both
  // directions in one visit halve the rounds.
  auto visit = [&](Vertex v, std::span<const Vertex> nbrs) {
    Vertex m = r.label[v];
    for (Vertex w : nbrs) m = std::min(m, r.label[w]);
    if (m < r.label[v]) {
      r.label[v] = m;
      if (!queued[v]) {
        queued[v] = 1;
        next.push_back(v);
      }
    }
    for (Vertex w : nbrs) {
      if (r.label[w] > m) {
        r.label[w] = m;
        if (!queued[w]) {
          queued[w] = 1;
          next.push_back(w);
        }
      }
    }
  };

  // A directed graph's out-list of v does not name v's in-neighbours: read
  // both lists of every vertex, so a label crosses every arc both ways.
  Status st = reader.read_all(visit);
  if (st && in_reader) st = in_reader->read_all(visit);
  if (!st) return st;
  r.rounds = 1;
  std::vector<Vertex> frontier;
  while (!next.empty()) {
    frontier.swap(next);
    next.clear();
    for (Vertex v : frontier) queued[v] = 0;
    if (in_reader) {
      std::vector<Vertex> copy = frontier;
      st = in_reader->read_lists(copy, visit);
      if (!st) return st;
    }
    st = reader.read_lists(frontier, visit);
    if (!st) return st;
    ++r.rounds;
  }
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
