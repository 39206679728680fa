// `gen`: builds a Graph500 Kronecker graph as an on-disk CSR (csr_format.h).
//
// Pipeline: sample edges in memory-sized chunks (several threads, each edge
// a pure function of seed and index, see rng.h), store both directions,
// sort and deduplicate each chunk into a run file, then k-way merge the runs
// straight into the CSR files. Peak memory is about `memory_bytes` plus
// small buffers, whatever the scale. Self-loops and duplicate edges are
// removed. A weighted graph (`weighted`, GAP's generator's weights) gives
// every edge a weight in [1, kMaxGeneratedWeight], a pure function of the
// seed and the unordered pair (so both entries of an edge agree), written
// as the merge streams the keys: the sort carries no weights. graph.meta
// is written last, so an interrupted run leaves no
// graph that looks complete.
//
// Thread rules: call from one thread; it starts its own sampling threads and
// joins them before returning.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

#include "peregrine/graph/csr_format.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

struct GenOptions {
  uint32_t scale = 0;
  uint32_t edgefactor = 16;
  uint64_t seed = 1;
  uint64_t memory_bytes = 1ULL << 30;  // budget for the in-memory sort batch
  unsigned threads = 0;                // sampling threads; 0 = hardware concurrency; 1 also sorts on one thread
  bool weighted = false;               // weights.u32: uniform in [1, kMaxGeneratedWeight]
};

// GAP's generator draws weights from [1, 255] too.
inline constexpr uint32_t kMaxGeneratedWeight = 255;
// The weight `gen` gives the edge {u, v} of a graph generated with `seed`.
uint32_t generated_weight(uint64_t seed, uint32_t u, uint32_t v);

inline constexpr uint64_t kMinMemoryBytes = 64 * 1024;

// phase is "sample" or "merge"; done/total count edges (sample) or keys (merge).
using ProgressFn = std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

Expected<GraphMeta> generate_graph(const GenOptions& options, const std::filesystem::path& out,
                                   const ProgressFn& progress = {});

}  // namespace peregrine::graph
