// DIMACS shortest-path graphs (the 9th DIMACS Implementation Challenge's
// .gr, which GAP's road graphs use), read line by line:
//   c <text>        a comment
//   p sp <N> <M>    the problem line, once, before any arc: N vertices
//                   (ids 1..N), M arcs
//   a <u> <v> <w>   an arc u -> v of weight w
// Arcs are counted against M; ids are checked against 1..N.
#include <cerrno>
#include <string>

#include "edge_input_formats.h"
#include "line_fields.h"
#include "peregrine/graph/csr_format.h"
#include "peregrine/graph/line_reader.h"

namespace peregrine::graph::detail {
namespace {

class DimacsInput final : public EdgeInput {
 public:
  DimacsInput(int fd, const std::filesystem::path& path, uint64_t size, std::string_view prefix)
      : lines_(fd, path, prefix) {
    file_bytes_ = size;
    format_ = InputFormat::kDimacs;
    weighted_ = true;
  }

  // Reads up to the problem line.
  Status start() {
    std::string_view line;
    while (true) {
      auto more = lines_.next(&line);
      if (!more) return more.status();
      Fields f(line, lines_);
      if (!*more) return f.error("no problem line 'p sp N M' before the end of the file (not a DIMACS .gr file?)");
      const std::string_view kind = f.word();
      if (kind.empty() || kind == "c") continue;
      if (kind != "p") return f.error("expected the problem line 'p sp N M' before any arc (not a DIMACS .gr file?)");
      if (f.word() != "sp") return f.error("problem line must be 'p sp N M' (a shortest-path problem)");
      uint64_t n = 0, m = 0;
      Status st = f.number(&n, "vertex count");
      if (st) st = f.number(&m, "arc count");
      if (!st) return st;
      if (!f.at_end()) return f.error("problem line must be 'p sp N M'");
      if (n == 0) return f.error("graph has no vertices");
      if (n > kMaxVertices)
        return f.error("the problem line declares " + std::to_string(n) + " vertices; at most 2^32 are supported");
      arcs_.declare(n, m);
      declared_vertices_ = n;
      return Status::ok();
    }
  }

  Expected<size_t> read(std::span<InputEdge> out, std::span<uint32_t> weights) override {
    size_t n = 0;
    std::string_view line;
    while (n < out.size()) {
      auto more = lines_.next(&line);
      if (!more) return more.status();
      Fields f(line, lines_);
      if (!*more) {
        if (Status st = arcs_.finish(f); !st) return st;
        break;
      }
      const std::string_view kind = f.word();
      if (kind.empty() || kind == "c") continue;
      if (kind == "p") return f.error("a second problem line");
      if (kind != "a")
        return f.error("unknown line type '" + std::string(kind.substr(0, 20)) +
                       "' (DIMACS lines start with c, p or a)");
      if (Status st = arcs_.parse(f, &out[n], &weights[n]); !st) return st;
      ++n;
    }
    return n;
  }

  uint64_t bytes_consumed() const override { return lines_.bytes_consumed(); }

 private:
  LineReader lines_;
  DeclaredEntries arcs_{{"vertex", "arcs", "problem line", "arc tail", "arc head"}};
};

}  // namespace

Expected<std::unique_ptr<EdgeInput>> open_dimacs_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                       std::string_view prefix) {
  return open_started<DimacsInput>(fd, path, size, prefix);
}

}  // namespace peregrine::graph::detail
