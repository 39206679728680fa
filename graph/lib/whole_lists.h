// Internal to the algorithms that compute on several threads: reads the
// whole lists of a sorted batch of vertices into memory a chunk at a time
// (tc).
//
// The reader hands a list over in pieces when it spans reads, and pieces
// of different vertices interleave as reads complete; read_whole_lists()
// gathers each list until its degree is reached, so a chunk holds whole
// lists only. A chunk is at most about `budget` entries (one longer list
// alone), with each entry passed through `keep(owner, neighbour)` first.
//
// Thread rules: read_whole_lists() runs on the IO thread (the reader's);
// the chunk it hands `on_chunk` is read-only while on_chunk runs.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"

namespace peregrine::graph::detail {

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
  std::span<const Vertex> list(size_t i) const { return {entries.data() + offsets[i], offsets[i + 1] - offsets[i]}; }
  template <class Keep>
  void add(Vertex v, std::span<const Vertex> nbrs, const Keep& keep) {
    owner.push_back(v);
    for (Vertex w : nbrs)
      if (keep(v, w)) entries.push_back(w);
    offsets.push_back(entries.size());
  }
};

// Calls on_chunk(const Lists&) for consecutive chunks of `vertices`
// (ascending); each chunk's lists in the order they completed.
template <class Keep, class OnChunk>
Status read_whole_lists(const Graph& graph, AdjacencyReader& reader, std::span<const Vertex> vertices,
                        uint64_t budget, const Keep& keep, const OnChunk& on_chunk) {
  Lists chunk;
  std::unordered_map<Vertex, std::vector<Vertex>> partial;
  std::vector<Vertex> batch;
  size_t first = 0;
  while (first < vertices.size()) {
    size_t last = first;
    for (uint64_t entries = 0;
         last < vertices.size() && (last == first || entries + graph.degree(vertices[last]) <= budget); ++last)
      entries += graph.degree(vertices[last]);
    chunk.clear();
    batch.assign(vertices.begin() + static_cast<ptrdiff_t>(first), vertices.begin() + static_cast<ptrdiff_t>(last));
    Status st = reader.read_lists(batch, [&](Vertex v, std::span<const Vertex> nbrs) {
      const uint64_t degree = graph.degree(v);
      if (nbrs.size() == degree) return chunk.add(v, nbrs, keep);
      std::vector<Vertex>& acc = partial[v];
      acc.insert(acc.end(), nbrs.begin(), nbrs.end());
      if (acc.size() < degree) return;
      std::vector<Vertex> whole = std::move(acc);
      partial.erase(v);
      chunk.add(v, whole, keep);
    });
    if (!st) return st;
    if (!partial.empty())
      return Status::error(EIO, "adjacency list of vertex " + std::to_string(partial.begin()->first) +
                                    " ended short of its degree");
    on_chunk(static_cast<const Lists&>(chunk));
    first = last;
  }
  return Status::ok();
}

}  // namespace peregrine::graph::detail
