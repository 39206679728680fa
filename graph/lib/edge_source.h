// Internal to import: pass 2's reading of the edges that pass 1 parsed,
// from one of three places: memory (they fit half the budget), the scratch
// file of raw (u64, u64) pairs (a stream that did not fit), or the input
// file itself, parsed again (a regular file that did not fit: no scratch
// copy of it is written). A file parsed again is checked to give the same
// number of edges; the caller checks that every id is in the id map. A
// weighted input's weights come along: held beside the edges, in a scratch
// file of their own beside the raw pairs, or parsed again.
// Thread rules: owned by one thread.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "peregrine/graph/edge_input.h"
#include "peregrine/util/result.h"
#include "raw_edge_file.h"

namespace peregrine::graph::detail {

class EdgeSource {
 public:
  // `weights`: the held edges' weights, if `weighted`.
  static EdgeSource held(const std::vector<InputEdge>& edges, const std::vector<uint32_t>& weights, bool weighted) {
    EdgeSource s;
    s.held_ = &edges;
    s.held_weights_ = &weights;
    s.weighted_ = weighted;
    return s;
  }
  // `weights_path`: the weights' scratch file (empty: unweighted).
  static Expected<EdgeSource> raw(const std::filesystem::path& path, const std::filesystem::path& weights_path) {
    auto f = RawEdges::open(path);
    if (!f) return f.status();
    EdgeSource s;
    s.raw_.emplace(std::move(*f));
    if (!weights_path.empty()) {
      auto w = RawWeights::open(weights_path);
      if (!w) return w.status();
      s.raw_weights_.emplace(std::move(*w));
      s.weighted_ = true;
    }
    return s;
  }
  static Expected<EdgeSource> reparse(const std::filesystem::path& input, InputFormat format, unsigned threads,
                                      uint64_t expected_edges, bool weighted) {
    auto in = EdgeInput::open(input, format, threads, weighted);
    if (!in) return in.status();
    EdgeSource s;
    s.input_ = std::move(*in);
    s.name_ = input.string();
    s.expected_ = expected_edges;
    s.weighted_ = s.input_->weighted();
    return s;
  }

  bool weighted() const { return weighted_; }

  // Fills the front of buf (and of weights, as long, when weighted); 0 at the end.
  Expected<size_t> read(std::vector<InputEdge>& buf, std::vector<uint32_t>& weights) {
    if (weighted_ && weights.size() < buf.size())
      return Status::error(EINVAL, "import: weighted edges read without room for their weights");
    if (raw_) {
      auto n = raw_->read(buf);
      if (!n || !raw_weights_) return n;
      auto w = raw_weights_->read(weights, *n);
      if (!w) return w.status();
      if (*w != *n) return Status::error(EIO, "import scratch data corrupt: fewer weights than edges");
      return n;
    }
    if (input_) {
      auto n = input_->read(buf, weights);
      if (!n) return n.status();
      seen_ += *n;
      if (seen_ > expected_ || (*n == 0 && seen_ != expected_))
        return changed("it now has " + std::string(*n == 0 ? "" : "more than ") + std::to_string(seen_) + " edges, " +
                       std::to_string(expected_) + " when first read");
      return n;
    }
    const size_t n = std::min(buf.size(), held_->size() - pos_);
    std::copy_n(held_->begin() + static_cast<ptrdiff_t>(pos_), n, buf.begin());
    if (weighted_) std::copy_n(held_weights_->begin() + static_cast<ptrdiff_t>(pos_), n, weights.begin());
    pos_ += n;
    return n;
  }

  // The error for an id that pass 1 did not see: only a file that changed
  // under import can give one.
  Status unknown_id(uint64_t id) const {
    if (input_) return changed("vertex id " + std::to_string(id) + " was not in it when first read");
    return Status::error(EIO, "import scratch data corrupt: vertex id " + std::to_string(id) + " not in the id map");
  }

 private:
  EdgeSource() = default;
  Status changed(const std::string& why) const {
    return Status::error(EIO, name_ + ": changed while being imported (" + why + ")");
  }

  const std::vector<InputEdge>* held_ = nullptr;
  const std::vector<uint32_t>* held_weights_ = nullptr;
  size_t pos_ = 0;
  std::optional<RawEdges> raw_;
  std::optional<RawWeights> raw_weights_;
  bool weighted_ = false;
  std::unique_ptr<EdgeInput> input_;
  std::string name_;
  uint64_t expected_ = 0;
  uint64_t seen_ = 0;
};

}  // namespace peregrine::graph::detail
