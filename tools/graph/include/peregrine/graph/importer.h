// `import`: builds an on-disk CSR (csr_format.h) from the user's edge list
// (edge_input.h), in bounded memory.
//
// Pipeline, all under DIR/.import-runs-PID/:
//   parse   read the input once, append every edge as a raw (u64, u64) pair
//           to a scratch file, and sort the ids seen into unique runs;
//   ids     merge the id runs: the vertices are exactly the ids that occur
//           (Matrix Market: 1..rows), ascending; vertex v is the v-th id.
//           Written to ids.u64;
//   remap   reread the scratch edges, map both ends to vertices, drop and
//           count self-loops, store both directions (undirected) or the
//           arc and its reverse for the transpose (directed), in sorted
//           unique runs of `memory_bytes`;
//   merge   k-way merge straight into index.u64/adjacency.u32 (and the
//           in_* transpose), counting duplicates as what the merge dropped.
// Memory: about memory_bytes for the sort batches, plus 8 bytes per vertex
// for the id map during remap (and 4 bytes per id in the ids' range for a
// lookup table when that fits memory_bytes). Files are fsynced, graph.meta
// is written last. Call from one thread.
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
  unsigned threads = 0;  // text parsing threads; 0 = one per core
};

// Progress phases: "parse" (input bytes), "ids", "remap" (edges), "merge"
// and, for a directed graph, "merge-in" (keys).
Expected<GraphMeta> import_graph(const std::filesystem::path& input, const ImportOptions& options,
                                 const std::filesystem::path& out, const ProgressFn& progress = {});

}  // namespace peregrine::graph
