// The on-disk CSR: invariants of generated graphs, the metadata codec, and
// `check` catching damage.
#include <fcntl.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include "graph_test_dir.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphCsr, GeneratedGraphKeepsInvariants) {
  TestDir d;
  auto dir = test::generate(d, "g", 13, 11);
  auto g = open_graph(dir);
  ASSERT_TRUE(g) << g.status().message();
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m) << m.status().message();
  const uint64_t n = g->num_vertices();
  ASSERT_EQ(g->offsets.size(), n + 1);
  EXPECT_EQ(g->offsets.front(), 0u);
  EXPECT_EQ(g->offsets.back(), g->meta.adjacency_entries);
  uint64_t isolated = 0;
  for (uint64_t u = 0; u < n; ++u) {
    ASSERT_LE(g->offsets[u], g->offsets[u + 1]) << "offsets decrease at " << u;
    auto nb = m->neighbours(u);
    isolated += nb.empty();
    for (size_t i = 0; i < nb.size(); ++i) {
      ASSERT_LT(nb[i], n) << "neighbour out of range at vertex " << u;
      ASSERT_NE(nb[i], u) << "self-loop at vertex " << u;
      if (i > 0) {
        ASSERT_LT(nb[i - 1], nb[i]) << "unsorted or duplicate at vertex " << u;
      }
      ASSERT_TRUE(m->has_edge(nb[i], u)) << "edge " << u << "->" << nb[i] << " has no reverse";
    }
  }
  // Kronecker graphs leave many vertices isolated, but not most of them.
  EXPECT_GT(isolated, 0u);
  EXPECT_LT(isolated, n / 2);
  EXPECT_TRUE(check_graph(*m));
}

TEST(GraphCsr, HandBuiltGraphHasExactLists) {
  TestDir d;
  // Loops and duplicates (in either direction) are dropped by the builder.
  auto dir = test::write_graph(d, "g", 3, {{0, 1}, {1, 0}, {1, 2}, {2, 2}, {5, 1}, {7, 0}});
  auto g = open_graph(dir);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_EQ(g->meta.edges, 4u);
  EXPECT_EQ(g->offsets, (std::vector<uint64_t>{0, 2, 5, 6, 6, 6, 7, 7, 8}));
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->adjacency, (std::vector<Vertex>{1, 7, 0, 2, 5, 1, 1, 0}));
  EXPECT_TRUE(check_graph(*m));
}

TEST(GraphCsr, MetaRoundTrips) {
  GraphMeta m;
  m.scale = 20;
  m.edgefactor = 16;
  m.seed = 0xfeedULL;
  m.vertices = 1 << 20;
  m.sampled_edges = 16u << 20;
  m.edges = 1234567;
  m.adjacency_entries = 2 * 1234567;
  m.index_crc32c = 0xdeadbeef;
  m.adjacency_crc32c = 0x01020304;
  auto p = parse_meta(format_meta(m), "x/graph.meta");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->scale, m.scale);
  EXPECT_EQ(p->seed, m.seed);
  EXPECT_EQ(p->edges, m.edges);
  EXPECT_EQ(p->sampled_edges, m.sampled_edges);
  EXPECT_EQ(p->index_crc32c, m.index_crc32c);
  EXPECT_EQ(p->adjacency_crc32c, m.adjacency_crc32c);
  EXPECT_FALSE(p->directed);
  EXPECT_FALSE(p->imported);
}

TEST(GraphCsr, WeightedMetaRoundTripsAsVersionThree) {
  GraphMeta m;
  m.scale = 4;
  m.vertices = 16;
  m.edges = 3;
  m.adjacency_entries = 6;
  m.weighted = true;
  m.weights_crc32c = 0xabcdef01;
  m.max_weight = 300;
  const std::string text = format_meta(m);
  EXPECT_NE(text.find("format_version 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("weights_file weights.u32\n"), std::string::npos) << text;
  auto p = parse_meta(text, "x/graph.meta");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_TRUE(p->weighted);
  EXPECT_EQ(p->weights_crc32c, m.weights_crc32c);
  EXPECT_EQ(p->max_weight, 300u);
  EXPECT_EQ(p->format_version, kWeightedFormatVersion);
  m.weighted = false;
  EXPECT_NE(format_meta(m).find("format_version 2\n"), std::string::npos) << "unweighted graphs stay version 2";
}

TEST(GraphCsr, ImportedDirectedMetaRoundTrips) {
  GraphMeta m;
  m.imported = true;
  m.directed = true;
  m.vertices = 34;
  m.edges = 78;
  m.adjacency_entries = 78;
  m.input_edges = 81;
  m.self_loops = 1;
  m.duplicates = 2;
  m.has_id_map = true;
  m.id_map_crc32c = 0x11223344;
  m.in_index_crc32c = 0x55667788;
  m.in_adjacency_crc32c = 0x99aabbcc;
  auto p = parse_meta(format_meta(m), "x/graph.meta");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_TRUE(p->directed);
  EXPECT_TRUE(p->imported);
  EXPECT_EQ(p->vertices, 34u);
  EXPECT_EQ(p->input_edges, 81u);
  EXPECT_EQ(p->self_loops, 1u);
  EXPECT_EQ(p->duplicates, 2u);
  EXPECT_TRUE(p->has_id_map);
  EXPECT_EQ(p->id_map_crc32c, m.id_map_crc32c);
  EXPECT_EQ(p->in_index_crc32c, m.in_index_crc32c);
  EXPECT_EQ(p->in_adjacency_crc32c, m.in_adjacency_crc32c);
}

TEST(GraphCsr, CheckCatchesFlippedByte) {
  TestDir d;
  auto dir = test::generate(d, "g", 10);
  {
    int fd = ::open((dir / kAdjacencyFile).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, 100), 1);
    c ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &c, 1, 100), 1);
    ::close(fd);
  }
  auto g = open_graph(dir);
  ASSERT_TRUE(g) << g.status().message();  // sizes are still right
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m);
  Status st = check_graph(*m);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("adjacency.u32: checksum"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
