// Streams sorted, unique directed edge keys into index.u64 and
// adjacency.u32 (csr_format.h), and for a weighted graph each key's weight
// into weights.u32. Because keys arrive in CSR order, neither
// the index nor the adjacency ever sits in memory: offsets are emitted as
// the source vertex advances.
// Thread rules: owned by one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "peregrine/graph/csr_format.h"
#include "peregrine/graph/file_writer.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

class CsrWriter {
 public:
  // Writes DIR/index_file and DIR/adjacency_file (the out-lists by
  // default; import passes the in_* names for a directed graph's transpose).
  static Expected<CsrWriter> create(const std::filesystem::path& dir, uint64_t vertices,
                                    const char* index_file = kIndexFile, const char* adjacency_file = kAdjacencyFile);
  // The out-lists of a weighted graph: also DIR/weights.u32.
  static Expected<CsrWriter> create_weighted(const std::filesystem::path& dir, uint64_t vertices);

  // REQUIRES: keys ascending and unique across all calls, sources < vertices;
  // an unweighted writer.
  Status add(std::span<const uint64_t> keys);
  // The same with weights[i] the weight of keys[i]; a weighted writer.
  Status add(std::span<const uint64_t> keys, std::span<const uint32_t> weights);
  // Writes the remaining offsets and fsyncs both files.
  Status finish();
  // finish(), then fills in the counts and checksums of an undirected `meta`
  // (and its weights', from a weighted writer).
  Status finish(GraphMeta* meta);

  uint64_t entries() const { return entries_; }
  uint32_t index_crc() const { return index_.crc(); }
  uint32_t adjacency_crc() const { return adjacency_.crc(); }
  uint32_t weights_crc() const { return weights_ ? weights_->crc() : 0; }
  uint32_t max_weight() const { return max_weight_; }

 private:
  CsrWriter(uint64_t vertices, FileWriter index, FileWriter adjacency)
      : vertices_(vertices), index_(std::move(index)), adjacency_(std::move(adjacency)) {}
  Status emit_offsets_through(uint64_t vertex);
  Status add_keys(std::span<const uint64_t> keys);

  uint64_t vertices_;
  FileWriter index_;
  FileWriter adjacency_;
  std::optional<FileWriter> weights_;
  uint32_t max_weight_ = 0;
  uint64_t next_vertex_ = 0;  // first vertex whose offset is not yet written
  uint64_t entries_ = 0;
  std::vector<uint64_t> offset_buf_;
  std::vector<uint32_t> adj_buf_;
};

}  // namespace peregrine::graph
