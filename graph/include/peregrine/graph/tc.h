// Semi-external triangle counting (GAP's tc): how many triangles an
// undirected graph has, and optionally how many each vertex is a corner of.
//
// Each edge is taken from its lower-ranked end to its higher-ranked one,
// the rank ordering vertices by degree, then id (so a vertex keeps at most
// about sqrt(2m) higher-ranked neighbours, and a hub's long list is
// intersected rarely). A triangle u < v < w (by rank) is counted once, at
// u, as w in both N+(u) and N+(v). Vertices are taken in batches in id
// order: the batch's lists are read (one sorted sweep) and their
// higher-ranked parts kept in memory, up to batch_entries of them; then
// the lists of every higher-ranked neighbour they name are read in sorted
// sweeps of about batch_entries, and each sweep's lists are marked and
// intersected with the batch lists that named them on `threads` threads.
// Memory: twice batch_entries 4-byte entries, 4 bytes a vertex for the
// ranks and 4 per vertex and thread for the marks, and 8 more per vertex
// with per_vertex counts.
//
// Thread rules: the calling thread is the one IO thread (it alone uses the
// reader); the counting threads (a team started once for the run) read
// the batch and the sweep's lists, each with its own marks and count, and
// add to per_vertex with atomic increments; all are done with a chunk
// before the next one is read.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct TcOptions {
  // Higher-ranked neighbours kept in memory per batch (4 bytes each).
  uint64_t batch_entries = uint64_t{1} << 24;
  // Count the triangles at every vertex too (TcResult::per_vertex).
  bool per_vertex = false;
  // Threads that count, the calling one included; 0: one per CPU.
  uint32_t threads = 0;
};

struct TcResult {
  uint64_t triangles = 0;
  std::vector<uint64_t> per_vertex;  // triangles at each vertex, if asked for
  uint64_t batches = 0;
};

// Undirected graphs only (a directed graph is refused with an error).
Expected<TcResult> run_tc(const Graph& graph, AdjacencyReader& reader, const TcOptions& options = {});

}  // namespace peregrine::graph
