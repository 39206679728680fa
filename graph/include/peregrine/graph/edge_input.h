// The edge-list files `import` reads, as a stream of (u, v) pairs of the
// user's 64-bit vertex ids, and for a weighted input each edge's weight
// (an unsigned 32-bit integer):
//   text   SNAP style, GAP's .el: one edge per line, "u v" separated by
//          blanks or tabs, further columns (weights, timestamps) ignored;
//          weighted (GAP's .wel), the third column is the weight; blank
//          lines and lines starting with '#' or '%' skipped; CRLF accepted;
//   mm     Matrix Market "coordinate" (any field; values ignored, or the
//          weights when weighted: field 'integer'), 1-based ids; the size
//          line declares vertices 1..rows (rows == cols);
//   gr     DIMACS shortest-path graphs (9th DIMACS challenge, GAP's .gr):
//          "c" comment lines, one "p sp N M" line, then M arcs "a u v w",
//          1-based ids declaring vertices 1..N; always weighted;
//   bin32, bin64  little-endian uint32 / uint64 pairs, nothing else (no
//          weights).
// A bad line is an error naming FILE:LINE and what is wrong (the first bad
// line of the file, also when text is parsed by several threads).
// Thread rules: owned by one thread; a text input starts its parsing threads
// inside read() and joins them before it returns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "peregrine/util/result.h"

namespace peregrine::graph {

enum class InputFormat { kAuto, kText, kMatrixMarket, kDimacs, kBin32, kBin64 };

// "auto", "text", "mm", "gr", "bin32", "bin64"; nullopt otherwise.
// ("el" and "wel" name text, the second weighted.)
std::optional<InputFormat> parse_input_format(std::string_view name);
const char* input_format_name(InputFormat f);

struct InputEdge {
  uint64_t u;
  uint64_t v;
};

class EdgeInput {
 public:
  // kAuto: Matrix Market if the file starts with "%%MatrixMarket", DIMACS
  // if it is named *.gr or starts with a "c" or "p sp" line, else text
  // (weighted if named *.wel).
  // `path` "-" is standard input; a pipe or FIFO is read as a stream.
  // `threads`: text is parsed by this many threads (0: one per core).
  // `weighted`: read each edge's weight (a DIMACS file and a *.wel file
  // are weighted anyway); binary inputs have none to read.
  static Expected<std::unique_ptr<EdgeInput>> open(const std::filesystem::path& path, InputFormat format,
                                                   unsigned threads = 0, bool weighted = false);
  virtual ~EdgeInput() = default;

  // Fills the front of `out`, and of `weights` if the input is weighted
  // (then weights.size() >= out.size()); returns how many edges, 0 at the end.
  virtual Expected<size_t> read(std::span<InputEdge> out, std::span<uint32_t> weights) = 0;
  // An unweighted input's edges (a weighted one has no room for its weights here).
  Expected<size_t> read(std::span<InputEdge> out) {
    if (weighted_) return Status::error(EINVAL, "a weighted edge list read without room for its weights");
    return read(out, {});
  }
  bool weighted() const { return weighted_; }

  virtual uint64_t bytes_consumed() const = 0;
  uint64_t file_bytes() const { return file_bytes_; }  // 0 for a stream
  bool size_known() const { return size_known_; }      // false for a stream
  InputFormat format() const { return format_; }
  // Matrix Market: every id in [1, declared_vertices] is a vertex, even
  // without an entry; the file says whether each entry stands for both
  // directions (symmetric, skew-symmetric, hermitian).
  std::optional<uint64_t> declared_vertices() const { return declared_vertices_; }
  bool symmetric() const { return symmetric_; }

 protected:
  uint64_t file_bytes_ = 0;
  bool size_known_ = true;
  InputFormat format_ = InputFormat::kText;
  std::optional<uint64_t> declared_vertices_;
  bool symmetric_ = false;
  bool weighted_ = false;
};

}  // namespace peregrine::graph
