// Where the graph tests put their graphs, and small graph builders.
//
// TestDir makes a fresh directory under $PEREGRINE_GRAPH_DIR when that is set
// (so the integration suite can rerun every test on a peregrine mount), else
// under /tmp; if the base refuses O_DIRECT (tmpfs before Linux 6.6) it falls
// back to /var/tmp, which is disk-backed, and says so on stderr. The
// directory and everything in it is removed when the TestDir dies. One test
// thread owns each TestDir.
#pragma once

#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#include "peregrine/graph/csr_format.h"

namespace peregrine::graph::test {

class TestDir {
 public:
  TestDir();
  ~TestDir();
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Generates a Kronecker graph into dir/name with default options (and
// gen's weights if `weighted`).
std::filesystem::path generate(const TestDir& dir, const std::string& name, uint32_t scale, uint64_t seed = 1,
                               bool weighted = false);

// Writes an undirected graph with 2^scale vertices and the given edges
// (either direction, loops and duplicates ignored) as a CSR directory.
std::filesystem::path write_graph(const TestDir& dir, const std::string& name, uint32_t scale,
                                  const std::vector<std::pair<Vertex, Vertex>>& edges);

// The same with a weight per edge (weights.u32, format 3); `weighted`
// false writes an unweighted graph and ignores them.
struct WeightedEdge {
  Vertex u, v;
  uint32_t weight;
};
std::filesystem::path write_weighted_graph(const TestDir& dir, const std::string& name, uint32_t scale,
                                           const std::vector<WeightedEdge>& edges, bool weighted = true);

// Reads a whole file as bytes.
std::vector<char> read_file(const std::filesystem::path& path);

}  // namespace peregrine::graph::test
