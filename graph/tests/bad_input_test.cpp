// Bad graph directories fail with an error naming the file and the problem.
#include <fcntl.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <fstream>

#include "graph_test_dir.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/bfs.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

class GraphBadInput : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::generate(tmp_, "g", 10); }

  std::string open_error() {
    auto g = open_graph(dir_);
    EXPECT_FALSE(g) << "opened a bad graph";
    return g ? "" : g.status().message();
  }
  void replace_in_meta(const std::string& from, const std::string& to) {
    auto path = dir_ / kMetaFile;
    auto bytes = test::read_file(path);
    std::string text(bytes.begin(), bytes.end());
    auto at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(path, std::ios::trunc) << text;
  }
  void truncate_file(const char* name, uint64_t by) {
    auto path = dir_ / name;
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(std::filesystem::file_size(path) - by)), 0);
  }

  TestDir tmp_;
  std::filesystem::path dir_;
};

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST_F(GraphBadInput, MissingDirectory) {
  auto g = open_graph(tmp_.path() / "nope");
  ASSERT_FALSE(g);
  EXPECT_CONTAINS(g.status().message(), "nope: not a graph directory");
}

TEST_F(GraphBadInput, MissingMeta) {
  std::filesystem::remove(dir_ / kMetaFile);
  EXPECT_CONTAINS(open_error(), "graph.meta: missing");
}

TEST_F(GraphBadInput, MissingAdjacency) {
  std::filesystem::remove(dir_ / kAdjacencyFile);
  EXPECT_CONTAINS(open_error(), "adjacency.u32: missing");
}

TEST_F(GraphBadInput, WrongFormatVersion) {
  replace_in_meta("format_version 2", "format_version 4");
  EXPECT_CONTAINS(open_error(), "graph.meta: format version 4 is not supported (this build reads versions 1 to 3)");
}

// Version 3 is a weighted graph's: it names its weights, and they must be
// there, at their size.
TEST_F(GraphBadInput, VersionThreeWithoutItsWeightsKeys) {
  replace_in_meta("format_version 2", "format_version 3");
  EXPECT_CONTAINS(open_error(), "graph.meta: missing key 'weighted'");
}

TEST_F(GraphBadInput, WeightsKeyInAnOlderVersion) {
  replace_in_meta("directed 0\n", "directed 0\nweighted 1\n");
  EXPECT_CONTAINS(open_error(), "graph.meta: key 'weighted' needs format version 3, not 2");
}

TEST_F(GraphBadInput, WeightedGraphWithoutItsWeightsFile) {
  replace_in_meta("format_version 2", "format_version 3");
  replace_in_meta("directed 0\n",
                  "directed 0\nweighted 1\nweights_file weights.u32\nweights_crc32c 0x0\nmax_weight 9\n");
  EXPECT_CONTAINS(open_error(), "weights.u32: missing (no such file)");
  std::ofstream(dir_ / "weights.u32") << "short";
  EXPECT_CONTAINS(open_error(), "weights.u32: truncated: 5 bytes, expected");
}

// A graph written before import existed (format 1: no 'directed' or
// 'source' keys) still opens, as an undirected generated graph.
TEST_F(GraphBadInput, VersionOneStillOpens) {
  replace_in_meta("format_version 2", "format_version 1");
  replace_in_meta("source kronecker\n", "");
  replace_in_meta("directed 0\n", "");
  auto g = open_graph(dir_);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(g->meta.format_version, 1u);
  EXPECT_FALSE(g->directed());
  EXPECT_EQ(g->num_vertices(), 1024u);
}

TEST_F(GraphBadInput, CrlfMetaSaysSo) {
  replace_in_meta("\nvertices 1024\n", "\nvertices 1024\r\n");
  EXPECT_CONTAINS(open_error(), "graph.meta: line 4 ends with a carriage return (CRLF line ends");
}

TEST_F(GraphBadInput, MissingMetaKey) {
  replace_in_meta("\nedges ", "\nedgez ");
  EXPECT_CONTAINS(open_error(), "graph.meta: missing key 'edges'");
}

TEST_F(GraphBadInput, TruncatedIndex) {
  truncate_file(kIndexFile, 8);
  std::string e = open_error();
  EXPECT_CONTAINS(e, "index.u64: truncated: 8192 bytes, expected 8200");
}

TEST_F(GraphBadInput, TruncatedAdjacency) {
  truncate_file(kAdjacencyFile, 4);
  EXPECT_CONTAINS(open_error(), "adjacency.u32: truncated");
}

TEST_F(GraphBadInput, DecreasingOffsets) {
  int fd = ::open((dir_ / kIndexFile).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint64_t huge = ~0ULL >> 1;
  ASSERT_EQ(::pwrite(fd, &huge, 8, 8 * 100), 8);
  ::close(fd);
  EXPECT_CONTAINS(open_error(), "index.u64: corrupt: offsets decrease at vertex 100");
}

// Counts so large that the expected file sizes wrap to an empty file's:
// refused by the meta, not found out by a kernel reading past its lists.
TEST_F(GraphBadInput, CountsNoFileCouldHoldAreRefused) {
  auto g = open_graph(dir_);
  ASSERT_TRUE(g) << g.status().message();
  GraphMeta m = g->meta;
  m.scale = 0;
  m.vertices = 1;
  m.edges = 1ULL << 61;
  m.adjacency_entries = 1ULL << 62;  // * 4 bytes wraps to 0
  std::ofstream(dir_ / kMetaFile, std::ios::trunc) << format_meta(m);
  const uint64_t index[2] = {0, m.adjacency_entries};
  {
    std::ofstream out(dir_ / kIndexFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(index), sizeof index);
  }
  std::filesystem::resize_file(dir_ / kAdjacencyFile, 0);
  EXPECT_CONTAINS(open_error(),
                  "graph.meta: edges 2305843009213693952 and adjacency_entries 4611686018427387904 must "
                  "be at most 2^60");
}

// Read from the file or kept in memory, the lists are checked before an
// algorithm sees them.
TEST_F(GraphBadInput, NeighbourOutOfRangeIsAnErrorNotACrash) {
  auto g = open_graph(dir_);
  ASSERT_TRUE(g);
  const uint32_t bad = 5000000;
  // An entry inside a list, the first entry of a later list in the same
  // read (the vertex must be that list's, not the one before), and the
  // file's last entry (the end of a list).
  uint64_t later_start = 10;
  for (uint64_t v = 0; g->offsets[v] <= 10 || g->offsets[v + 1] == g->offsets[v]; ++v) later_start = g->offsets[v + 1];
  for (uint64_t at : {uint64_t{10}, later_start, g->meta.adjacency_entries - 1})
    for (uint64_t keep : {uint64_t{0}, uint64_t{1} << 30}) {
      SCOPED_TRACE("entry " + std::to_string(at) + ", keep " + std::to_string(keep));
      auto bytes = test::read_file(dir_ / kAdjacencyFile);
      int fd = ::open((dir_ / kAdjacencyFile).c_str(), O_RDWR);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::pwrite(fd, &bad, 4, static_cast<off_t>(4 * at)), 4);
      ::close(fd);
      ReaderOptions o;
      o.keep_bytes = keep;
      auto r = AdjacencyReader::open(*g, o);
      ASSERT_TRUE(r);
      bool called = false;
      Status st = (*r)->read_all([&](Vertex, std::span<const Vertex> nb) {
        for (Vertex w : nb) called |= w == bad;
      });
      ASSERT_FALSE(st);
      EXPECT_FALSE(called) << "the bad id reached the algorithm";
      EXPECT_FALSE((*r)->kept());
      // The vertex whose list holds the entry is named, read or kept.
      uint64_t owner = 0;
      while (g->offsets[owner + 1] <= at) ++owner;
      EXPECT_CONTAINS(st.message(), "adjacency.u32: corrupt: vertex " + std::to_string(owner) +
                                        " has neighbour 5000000 >= 1024 vertices");
      (*r).reset();  // closed before the file is put back
      std::ofstream(dir_ / kAdjacencyFile, std::ios::binary | std::ios::trunc)
          .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
}

// A file that shrank after the graph was opened: the load says where the
// data ends.
TEST_F(GraphBadInput, AdjacencyShrunkAfterOpenIsAnErrorWhenKept) {
  auto g = open_graph(dir_);
  ASSERT_TRUE(g);
  ReaderOptions o;
  o.keep_bytes = 1ULL << 30;
  o.max_io_bytes = 4096;
  auto r = AdjacencyReader::open(*g, o);
  ASSERT_TRUE(r);
  truncate_file(kAdjacencyFile, 8192);
  Status st = (*r)->read_all([](Vertex, std::span<const Vertex>) {});
  ASSERT_FALSE(st);
  EXPECT_FALSE((*r)->kept());
  EXPECT_CONTAINS(st.message(), "adjacency.u32: truncated: no data at offset");
}

TEST_F(GraphBadInput, RootOutOfRange) {
  auto g = open_graph(dir_);
  ASSERT_TRUE(g);
  auto r = AdjacencyReader::open(*g, {});
  ASSERT_TRUE(r);
  auto b = run_bfs(*g, **r, 1024);
  ASSERT_FALSE(b);
  EXPECT_CONTAINS(b.status().message(), "root 1024 out of range");
  EXPECT_CONTAINS(b.status().message(), "has 1024 vertices (0..1023)");
}

}  // namespace
}  // namespace peregrine::graph
