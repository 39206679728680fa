// `import`: builds an on-disk CSR (csr_format.h) from the user's edge list
// (edge_input.h), in bounded memory.
//
// Pipeline, all under DIR/.import-runs-PID/:
//   parse   read the input once (text: by all cores, edge_input.h), sort the
//           ids seen into unique runs, and keep the edges for pass 2: in
//           memory if they fit half of memory_bytes, else nowhere for a
//           regular file (pass 2 parses it again) or as raw (u64, u64)
//           pairs in a scratch file for a stream (a weighted input's
//           weights beside them, in memory or a scratch file of their own);
//   ids     merge the id runs: the vertices are exactly the ids that occur
//           (Matrix Market: 1..rows), ascending; vertex v is the v-th id.
//           Streamed to ids.u64;
//   remap   map both ends of every edge to vertices, drop and count
//           self-loops, store both directions (undirected) or the arc and
//           its reverse for the transpose (directed), in sorted unique runs.
//           The id map gets a quarter of memory_bytes: if it does not fit
//           (8 bytes per id plus its lookup index), it is used in slices of
//           consecutive ids, one at a time, the edges passing through
//           scratch files partitioned by slice ("split", then "remap"),
//           each batch of a file sorted by id and merge-joined with the
//           slice's ids;
//   merge   k-way merge straight into index.u64/adjacency.u32 (and the
//           in_* transpose), counting duplicates as what the merge dropped.
// Weighted: each key is sorted with its weight (WeightedEdgeRuns; a
// duplicate edge keeps its smallest weight) and the merge writes
// weights.u32 beside the out-lists. A weighted input needs the whole id
// map in memory (contiguous ids, as DIMACS and Matrix Market have, need
// none): the sliced remap carries no weights, and says so.
// Memory: memory_bytes, plus buffers (8 MiB per text parsing thread, the
// slice files' and merges') and allocator slack: 23-46 MiB measured. Files are fsynced, graph.meta is written last.
//
// Thread rules: call from one thread (text parsing and the sorts start and
// join their own threads).
#pragma once

#include <cstdint>
#include <filesystem>

#include "peregrine/graph/csr_format.h"
#include "peregrine/graph/edge_input.h"
#include "peregrine/graph/generator.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

struct ImportOptions {
  InputFormat format = InputFormat::kAuto;
  bool directed = false;
  uint64_t memory_bytes = 1ULL << 30;
  unsigned threads = 0;   // text parsing threads; 0 = one per core; 1 also sorts on one thread
  bool weighted = false;  // read each edge's weight (DIMACS .gr and *.wel inputs are weighted anyway)
  // Tests only: at most this many ids in a slice of the id map (0: as many
  // as a quarter of memory_bytes holds), to slice small graphs.
  uint64_t max_slice_ids = 0;
};

// What import did with its memory and input, for reports and tests.
struct ImportStats {
  uint64_t input_reads = 0;    // 2 if pass 2 parsed the input file again
  uint64_t id_map_slices = 0;  // 1: the whole id map was in memory at once
  uint64_t id_map_bytes = 0;   // the most the id map (ids and lookup) held at once
  uint64_t key_runs = 0;       // sorted runs of CSR keys the merge read (both directions)
};

// Progress phases: "parse" (input bytes), "ids", "split" (edges; a sliced
// id map only), "remap" (edges, or twice the edges when sliced), "merge"
// and, for a directed graph, "merge-in" (keys).
Expected<GraphMeta> import_graph(const std::filesystem::path& input, const ImportOptions& options,
                                 const std::filesystem::path& out, const ProgressFn& progress = {},
                                 ImportStats* stats = nullptr);

}  // namespace peregrine::graph
