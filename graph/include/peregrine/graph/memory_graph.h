// The whole CSR in memory, for the references, the validators and `check`.
// Loaded with plain buffered reads, deliberately apart from the io_uring
// path it is used to check.
// Thread rules: immutable once loaded; any thread may read it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "peregrine/graph/csr_format.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

struct MemoryGraph {
  const Graph* graph = nullptr;  // offsets and meta
  std::vector<Vertex> adjacency;
  std::vector<uint32_t> weights;  // a weighted graph's, beside adjacency; else empty

  uint64_t num_vertices() const { return graph->num_vertices(); }
  std::span<const Vertex> neighbours(uint64_t v) const {
    return {adjacency.data() + graph->offsets[v], graph->offsets[v + 1] - graph->offsets[v]};
  }
  // The weights of v's list (weighted graphs only).
  std::span<const uint32_t> weights_of(uint64_t v) const {
    return {weights.data() + graph->offsets[v], graph->offsets[v + 1] - graph->offsets[v]};
  }
  bool weighted() const { return graph != nullptr && graph->weighted(); }
  // Binary search; lists are sorted.
  bool has_edge(uint64_t u, uint64_t v) const;
};

Expected<MemoryGraph> load_memory_graph(const Graph& graph);

}  // namespace peregrine::graph
