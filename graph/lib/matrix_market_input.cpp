// Matrix Market coordinate files, read line by line (the SNAP text parser,
// snap_text_input.cpp, is the parallel one: Matrix Market files are counted
// and checked entry by entry against their size line).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string>
#include <vector>

#include "edge_input_formats.h"
#include "peregrine/graph/line_reader.h"
#include "text_fields.h"

namespace peregrine::graph::detail {
namespace {

// A line's fields, with errors that name FILE:LINE.
class Fields {
 public:
  Fields(std::string_view line, const LineReader& lines)
      : p_(line.data()), e_(line.data() + line.size()), lines_(lines) {}

  // True if nothing but blanks is left.
  bool at_end() {
    p_ = skip_blanks(p_, e_);
    return p_ == e_;
  }
  char peek() { return at_end() ? '\0' : *p_; }

  // The next field as an unsigned 64-bit number; `what` names it in errors.
  Status number(uint64_t* out, const char* what) {
    at_end();
    std::string why;
    if (!parse_id(&p_, e_, out, what, &why)) return error(why);
    return Status::ok();
  }

  Status error(const std::string& what) const {
    return Status::error(EINVAL, lines_.path().string() + ":" + std::to_string(lines_.line_number()) + ": " + what);
  }

 private:
  const char* p_;
  const char* e_;
  const LineReader& lines_;
};

class MatrixMarketInput final : public EdgeInput {
 public:
  MatrixMarketInput(int fd, const std::filesystem::path& path, uint64_t size, std::string_view prefix)
      : lines_(fd, path, prefix) {
    file_bytes_ = size;
    format_ = InputFormat::kMatrixMarket;
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
    const std::string& sym = words[4];
    if (sym == "general")
      symmetric_ = false;
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
      uint64_t rows = 0, cols = 0;
      Status st = s.number(&rows, "row count");
      if (st) st = s.number(&cols, "column count");
      if (st) st = s.number(&declared_entries_, "entry count");
      if (!st) return st;
      if (!s.at_end()) return s.error("size line must be 'rows columns entries'");
      if (rows != cols)
        return s.error("matrix is " + std::to_string(rows) + " x " + std::to_string(cols) +
                       ": an adjacency matrix must be square");
      if (rows == 0) return s.error("matrix has no rows (no vertices)");
      rows_ = rows;
      declared_vertices_ = rows;
      return Status::ok();
    }
  }

  Expected<size_t> read(std::span<InputEdge> out) override {
    size_t n = 0;
    std::string_view line;
    while (n < out.size()) {
      auto more = lines_.next(&line);
      if (!more) return more.status();
      if (!*more) {
        if (entries_ != declared_entries_)
          return Fields(line, lines_)
              .error("end of file after " + std::to_string(entries_) + " entries; the size line declares " +
                     std::to_string(declared_entries_));
        break;
      }
      Fields f(line, lines_);
      const char c = f.peek();
      if (c == '\0' || c == '%') continue;
      Status st = f.number(&out[n].u, "row index");
      if (st) st = f.number(&out[n].v, "column index");
      if (!st) return st;
      for (uint64_t x : {out[n].u, out[n].v})
        if (x < 1 || x > rows_)
          return f.error("index " + std::to_string(x) + " out of range 1.." + std::to_string(rows_));
      if (++entries_ > declared_entries_)
        return f.error("more entries than the " + std::to_string(declared_entries_) + " the size line declares");
      ++n;
    }
    return n;
  }

  uint64_t bytes_consumed() const override { return lines_.bytes_consumed(); }

 private:
  LineReader lines_;
  uint64_t rows_ = 0;
  uint64_t declared_entries_ = 0;
  uint64_t entries_ = 0;
};

}  // namespace

Expected<std::unique_ptr<EdgeInput>> open_matrix_market_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                              std::string_view prefix) {
  auto in = std::make_unique<MatrixMarketInput>(fd, path, size, prefix);
  Status st = in->start();
  if (!st) return st;
  return std::unique_ptr<EdgeInput>(std::move(in));
}

}  // namespace peregrine::graph::detail
