// Matrix Market coordinate files, read line by line (the SNAP text parser,
// snap_text_input.cpp, is the parallel one: Matrix Market files are counted
// and checked entry by entry against their size line).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string>
#include <vector>

#include "edge_input_formats.h"
#include "line_fields.h"
#include "peregrine/graph/csr_format.h"
#include "peregrine/graph/line_reader.h"
#include "text_fields.h"

namespace peregrine::graph::detail {
namespace {

class MatrixMarketInput final : public EdgeInput {
 public:
  MatrixMarketInput(int fd, const std::filesystem::path& path, uint64_t size, std::string_view prefix, bool weighted)
      : lines_(fd, path, prefix) {
    file_bytes_ = size;
    format_ = InputFormat::kMatrixMarket;
    weighted_ = weighted;
  }

  // Reads the banner and the size line.
  Status start() {
    std::string_view line;
    auto more = lines_.next(&line);
    if (!more) return more.status();
    std::string banner(line);
    std::transform(banner.begin(), banner.end(), banner.begin(), [](unsigned char ch) { return std::tolower(ch); });
    while (!banner.empty() && blank(banner.back())) banner.pop_back();
    Fields f(banner, lines_);
    if (!*more || banner.rfind("%%matrixmarket", 0) != 0)
      return f.error("not a Matrix Market file (the first line must start with %%MatrixMarket)");
    // %%MatrixMarket matrix coordinate <field> <symmetry>
    std::vector<std::string> words;
    size_t i = 0;
    while (i < banner.size()) {
      while (i < banner.size() && blank(banner[i])) ++i;
      size_t j = i;
      while (j < banner.size() && !blank(banner[j])) ++j;
      if (j > i) words.push_back(banner.substr(i, j - i));
      i = j;
    }
    if (words.size() != 5 || words[1] != "matrix")
      return f.error("Matrix Market banner must be '%%MatrixMarket matrix coordinate FIELD SYMMETRY'");
    if (words[2] != "coordinate")
      return f.error("Matrix Market format '" + words[2] + "' is not a sparse matrix: only 'coordinate' is a graph");
    const std::string& field = words[3];
    if (field != "pattern" && field != "real" && field != "integer" && field != "complex" && field != "double")
      return f.error("unknown Matrix Market field '" + field + "'");
    if (weighted_ && field != "integer")
      return f.error("Matrix Market field '" + field + "': weights (import --weighted) are the values of an " +
                     "'integer' matrix, non-negative and below 2^32");
    const std::string& sym = words[4];
    if (sym == "general")
      symmetric_ = false;
    else if (weighted_ && sym == "skew-symmetric")
      return f.error(
          "Matrix Market symmetry 'skew-symmetric': the mirrored entries are the values negated, and "
          "weights (import --weighted) must be non-negative");
    else if (sym == "symmetric" || sym == "skew-symmetric" || sym == "hermitian")
      symmetric_ = true;
    else
      return f.error("unknown Matrix Market symmetry '" + sym + "'");

    while (true) {
      more = lines_.next(&line);
      if (!more) return more.status();
      if (!*more) return Fields(line, lines_).error("no size line (rows columns entries) before the end of the file");
      Fields s(line, lines_);
      const char c = s.peek();
      if (c == '\0' || c == '%') continue;
      uint64_t rows = 0, cols = 0, entries = 0;
      Status st = s.number(&rows, "row count");
      if (st) st = s.number(&cols, "column count");
      if (st) st = s.number(&entries, "entry count");
      if (!st) return st;
      if (!s.at_end()) return s.error("size line must be 'rows columns entries'");
      if (rows != cols)
        return s.error("matrix is " + std::to_string(rows) + " x " + std::to_string(cols) +
                       ": an adjacency matrix must be square");
      if (rows == 0) return s.error("matrix has no rows (no vertices)");
      if (rows > kMaxVertices)
        return s.error("matrix has " + std::to_string(rows) + " rows; at most 2^32 vertices are supported");
      entries_.declare(rows, entries);
      declared_vertices_ = rows;
      return Status::ok();
    }
  }

  Expected<size_t> read(std::span<InputEdge> out, std::span<uint32_t> weights) override {
    size_t n = 0;
    std::string_view line;
    while (n < out.size()) {
      auto more = lines_.next(&line);
      if (!more) return more.status();
      if (!*more) {
        if (Status st = entries_.finish(Fields(line, lines_)); !st) return st;
        break;
      }
      Fields f(line, lines_);
      const char c = f.peek();
      if (c == '\0' || c == '%') continue;
      if (Status st = entries_.parse(f, &out[n], weighted_ ? &weights[n] : nullptr); !st) return st;
      ++n;
    }
    return n;
  }

  uint64_t bytes_consumed() const override { return lines_.bytes_consumed(); }

 private:
  LineReader lines_;
  DeclaredEntries entries_{{"index", "entries", "size line", "row index", "column index"}};
};

}  // namespace

Expected<std::unique_ptr<EdgeInput>> open_matrix_market_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                              std::string_view prefix, bool weighted) {
  return open_started<MatrixMarketInput>(fd, path, size, prefix, weighted);
}

}  // namespace peregrine::graph::detail
