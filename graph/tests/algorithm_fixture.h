// Shared setup for the algorithm tests: open a graph directory, a reader
// with the default IO shape, and the in-memory copy the validators use.
// One test thread owns a Loaded.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "graph_test_dir.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph::test {

struct Loaded {
  Graph graph;
  std::unique_ptr<AdjacencyReader> reader;
  MemoryGraph mem;
};

// One 4 KiB read at a time, three in flight, nothing coalesced: a long
// list arrives in pieces, interleaved with other lists' pieces.
inline ReaderOptions tiny_reads() {
  ReaderOptions o;
  o.queue_depth = 3;
  o.max_io_bytes = 4096;
  o.coalesce_gap_bytes = 0;
  return o;
}

// Lists kept in memory after one read (any test graph fits 1 GiB).
inline ReaderOptions kept_lists() {
  ReaderOptions o;
  o.keep_bytes = 1ULL << 30;
  return o;
}

inline std::unique_ptr<Loaded> load(const std::filesystem::path& dir, ReaderOptions o = {}) {
  auto l = std::make_unique<Loaded>();
  auto g = open_graph(dir);
  if (!g) throw std::runtime_error(g.status().message());
  l->graph = std::move(*g);
  auto r = AdjacencyReader::open(l->graph, o);
  if (!r) throw std::runtime_error(r.status().message());
  l->reader = std::move(*r);
  auto m = load_memory_graph(l->graph);
  if (!m) throw std::runtime_error(m.status().message());
  l->mem = std::move(*m);
  l->mem.graph = &l->graph;
  return l;
}

}  // namespace peregrine::graph::test
