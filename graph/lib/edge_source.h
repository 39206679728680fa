// Internal to import: pass 2's reading of the edges that pass 1 parsed,
// from one of three places: memory (they fit half the budget), the scratch
// file of raw (u64, u64) pairs (a stream that did not fit), or the input
// file itself, parsed again (a regular file that did not fit: no scratch
// copy of it is written). A file parsed again is checked to give the same
// number of edges; the caller checks that every id is in the id map.
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
  static EdgeSource held(const std::vector<InputEdge>& edges) {
    EdgeSource s;
    s.held_ = &edges;
    return s;
  }
  static Expected<EdgeSource> raw(const std::filesystem::path& path) {
    auto f = RawEdges::open(path);
    if (!f) return f.status();
    EdgeSource s;
    s.raw_.emplace(std::move(*f));
    return s;
  }
  static Expected<EdgeSource> reparse(const std::filesystem::path& input, InputFormat format, unsigned threads,
                                      uint64_t expected_edges) {
    auto in = EdgeInput::open(input, format, threads);
    if (!in) return in.status();
    EdgeSource s;
    s.input_ = std::move(*in);
    s.name_ = input.string();
    s.expected_ = expected_edges;
    return s;
  }

  // Fills the front of buf; 0 at the end.
  Expected<size_t> read(std::vector<InputEdge>& buf) {
    if (raw_) return raw_->read(buf);
    if (input_) {
      auto n = input_->read(buf);
      if (!n) return n.status();
      seen_ += *n;
      if (seen_ > expected_ || (*n == 0 && seen_ != expected_))
        return changed("it now has " + std::string(*n == 0 ? "" : "more than ") + std::to_string(seen_) + " edges, " +
                       std::to_string(expected_) + " when first read");
      return n;
    }
    const size_t n = std::min(buf.size(), held_->size() - pos_);
    std::copy_n(held_->begin() + static_cast<ptrdiff_t>(pos_), n, buf.begin());
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
  size_t pos_ = 0;
  std::optional<RawEdges> raw_;
  std::unique_ptr<EdgeInput> input_;
  std::string name_;
  uint64_t expected_ = 0;
  uint64_t seen_ = 0;
};

}  // namespace peregrine::graph::detail
