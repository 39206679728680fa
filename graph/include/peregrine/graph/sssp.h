// Semi-external single-source shortest paths by delta-stepping (Meyer and
// Sanders; GAP's sssp): distances in memory, adjacency through one
// AdjacencyReader (out-lists: on a directed graph paths follow arcs).
// Vertices wait in buckets of width `delta` by tentative distance; the
// lowest bucket is settled in rounds, each one read_lists() batch of the
// vertices whose distance fell into it since the last round (sorted and
// coalesced reads, the queue kept deep), until no relaxation lands in it
// again; then the next non-empty bucket. A vertex whose distance dropped
// below its bucket's after it was filed is skipped there (it waits in the
// lower one).
//
// Weights: a weighted graph's (weights.u32, read beside the lists: open
// the reader with ReaderOptions::weights); on an unweighted graph every
// edge weighs 1, as GAP's sssp does with unweighted inputs, and the
// distances are hop counts.
//
// When the reader keeps the lists in memory, the rounds run on `threads`
// threads over them instead (sssp_kept.h): the same distances.
//
// Thread rules: runs on the calling (IO) thread, and over kept lists on
// a team of helper threads started once for the run, which wait between
// rounds.
#pragma once

#include <cstdint>
#include <vector>

#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/csr_format.h"

namespace peregrine::graph {

struct SsspOptions {
  // Bucket width, in weight units; 0: the graph's largest weight (1 when
  // unweighted) when the lists are read from the file, 1/128 of it (at
  // least 1) when they are kept in memory. Each bucket round reads its
  // vertices' lists, so fewer, wider buckets read less than GAP's default
  // of 1, which suits memory: on a scale-20 Kronecker graph with weights
  // in [1, 255], delta 1 reads the lists and their weights 24 times over,
  // 255 about 5 times (docs/graph.md).
  uint64_t delta = 0;
  uint32_t threads = 1;  // threads that relax over kept lists; 0: one per CPU
};

struct SsspResult {
  Vertex root = 0;
  uint64_t delta = 0;              // the bucket width used
  std::vector<uint64_t> distance;  // kUnreached or the length of a shortest path from root
  uint64_t reached = 0;            // vertices reached, root included
  uint64_t max_distance = 0;       // of the reached vertices
  uint64_t buckets = 0;            // non-empty buckets settled
  uint64_t rounds = 0;             // read_lists() batches (relaxation rounds)
  uint64_t relaxations = 0;        // edges that lowered a distance (over kept lists on several threads,
                                   // rounds and relaxations vary from run to run)
  static constexpr uint64_t kUnreached = UINT64_MAX;
};

// REQUIRES: root < graph.num_vertices(), and on a weighted graph a reader
// that reads the weights (checked: error otherwise).
Expected<SsspResult> run_sssp(const Graph& graph, AdjacencyReader& reader, uint64_t root,
                              const SsspOptions& options = {});

}  // namespace peregrine::graph
