// Streams sorted, unique directed edge keys into index.u64 and
// adjacency.u32 (csr_format.h). Because keys arrive in CSR order, neither
// the index nor the adjacency ever sits in memory: offsets are emitted as
// the source vertex advances. Owned by one thread.
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
  static Expected<CsrWriter> create(const std::filesystem::path& dir, uint64_t vertices);

  // REQUIRES: keys ascending and unique across all calls, sources < vertices.
  Status add(std::span<const uint64_t> keys);
  // Writes the remaining offsets, fsyncs both files and fills in the
  // counts and checksums of `meta`.
  Status finish(GraphMeta* meta);

 private:
  CsrWriter(uint64_t vertices, FileWriter index, FileWriter adjacency)
      : vertices_(vertices), index_(std::move(index)), adjacency_(std::move(adjacency)) {}
  Status emit_offsets_through(uint64_t vertex);

  uint64_t vertices_;
  FileWriter index_;
  FileWriter adjacency_;
  uint64_t next_vertex_ = 0;  // first vertex whose offset is not yet written
  uint64_t entries_ = 0;
  std::vector<uint64_t> offset_buf_;
  std::vector<uint32_t> adj_buf_;
};

}  // namespace peregrine::graph
