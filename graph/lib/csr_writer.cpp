#include "peregrine/graph/csr_writer.h"

#include <algorithm>
#include <cerrno>

#include "peregrine/graph/edge_runs.h"

namespace peregrine::graph {

Expected<CsrWriter> CsrWriter::create(const std::filesystem::path& dir, uint64_t vertices, const char* index_file,
                                      const char* adjacency_file) {
  auto index = FileWriter::create(dir / index_file);
  if (!index) return index.status();
  auto adjacency = FileWriter::create(dir / adjacency_file);
  if (!adjacency) return adjacency.status();
  return CsrWriter(vertices, std::move(*index), std::move(*adjacency));
}

Expected<CsrWriter> CsrWriter::create_weighted(const std::filesystem::path& dir, uint64_t vertices) {
  auto w = create(dir, vertices);
  if (!w) return w.status();
  auto weights = FileWriter::create(dir / kWeightsFile);
  if (!weights) return weights.status();
  w->weights_.emplace(std::move(*weights));
  return w;
}

Status CsrWriter::emit_offsets_through(uint64_t vertex) {
  // Vertices up to `vertex` start where the adjacency stands now.
  while (next_vertex_ <= vertex) {
    offset_buf_.push_back(entries_);
    ++next_vertex_;
    if (offset_buf_.size() == 8192) {
      Status st = index_.append(offset_buf_.data(), offset_buf_.size() * sizeof(uint64_t));
      if (!st) return st;
      offset_buf_.clear();
    }
  }
  return Status::ok();
}

Status CsrWriter::add(std::span<const uint64_t> keys, std::span<const uint32_t> weights) {
  if (!weights_ || weights.size() != keys.size())
    return Status::error(EINVAL, "weights given to an unweighted CSR writer, or not one per key");
  for (uint32_t w : weights) max_weight_ = std::max(max_weight_, w);
  Status st = weights_->append(weights.data(), weights.size() * sizeof(uint32_t));
  if (!st) return st;
  return add_keys(keys);
}

Status CsrWriter::add(std::span<const uint64_t> keys) {
  if (weights_) return Status::error(EINVAL, "a weighted CSR writer needs a weight for every key");
  return add_keys(keys);
}

Status CsrWriter::add_keys(std::span<const uint64_t> keys) {
  adj_buf_.clear();
  for (uint64_t k : keys) {
    uint64_t u = edge_source(k);
    if (u >= vertices_) return Status::error(EINVAL, "edge source out of range");
    if (u >= next_vertex_) {
      // Flush neighbours of earlier vertices before their successors' offsets
      // are counted; entries_ already includes them.
      Status st = emit_offsets_through(u);
      if (!st) return st;
    }
    adj_buf_.push_back(edge_target(k));
    ++entries_;
  }
  return adjacency_.append(adj_buf_.data(), adj_buf_.size() * sizeof(uint32_t));
}

Status CsrWriter::finish() {
  Status st = emit_offsets_through(vertices_);  // offsets of the remaining vertices and the n+1-th
  if (!st) return st;
  if (!offset_buf_.empty()) {
    st = index_.append(offset_buf_.data(), offset_buf_.size() * sizeof(uint64_t));
    if (!st) return st;
    offset_buf_.clear();
  }
  st = index_.finish();
  if (!st) return st;
  if (weights_) {
    st = weights_->finish();
    if (!st) return st;
  }
  return adjacency_.finish();
}

Status CsrWriter::finish(GraphMeta* meta) {
  Status st = finish();
  if (!st) return st;
  meta->adjacency_entries = entries_;
  meta->edges = entries_ / 2;
  meta->index_crc32c = index_.crc();
  meta->adjacency_crc32c = adjacency_.crc();
  meta->weighted = weights_.has_value();
  meta->weights_crc32c = weights_crc();
  meta->max_weight = max_weight_;
  return Status::ok();
}

}  // namespace peregrine::graph
