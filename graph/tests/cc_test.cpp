// Semi-external connected components against union-find.
#include "peregrine/graph/cc.h"

#include "algorithm_fixture.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphCc, MatchesUnionFindOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 14u}) {
    const auto dir = test::generate(d, "g" + std::to_string(scale), scale, 200 + scale);
    // Also with lists in 4 KiB pieces, interleaved: the sampling counts
    // what a list's earlier pieces gave.
    for (const ReaderOptions& o : {ReaderOptions{}, test::tiny_reads()}) {
      auto l = test::load(dir, o);
      auto r = run_cc(l->graph, *l->reader);
      ASSERT_TRUE(r) << r.status().message();
      Status st = validate_cc(l->mem, *r);
      EXPECT_TRUE(st) << st.message();
      EXPECT_GT(r->largest, l->graph.num_vertices() / 2);
      EXPECT_GT(r->components, 1u);  // isolated vertices are components
    }
  }
}

TEST(GraphCc, ExactOnSmallGraph) {
  TestDir d;
  // Components {0,3,7}, {1,6}, {2}, {4,5}.
  auto l = test::load(test::write_graph(d, "c", 3, {{7, 3}, {3, 0}, {6, 1}, {5, 4}}));
  auto r = run_cc(l->graph, *l->reader);
  ASSERT_TRUE(r) << r.status().message();
  std::vector<Vertex> want = {0, 1, 2, 0, 4, 4, 1, 0};
  EXPECT_EQ(r->label, want);
  EXPECT_EQ(reference_components(l->mem), want);
  EXPECT_EQ(r->components, 4u);
  EXPECT_EQ(r->largest, 3u);
}

TEST(GraphCc, ALongPathTakesTheSmallestIdFromItsFarEnd) {
  TestDir d;
  // A path whose smallest id sits at one end, its edges met from the other
  // end first: the label must reach along the whole path (label
  // propagation needed a round per hop here; the union-find one sweep).
  std::vector<std::pair<Vertex, Vertex>> edges;
  for (Vertex v = 1; v < 64; ++v) edges.push_back({static_cast<Vertex>(64 - v), static_cast<Vertex>(64 - v + 1)});
  edges.push_back({0, 64});
  auto l = test::load(test::write_graph(d, "path", 7, edges));
  auto r = run_cc(l->graph, *l->reader);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(validate_cc(l->mem, *r));
  for (Vertex v = 0; v <= 64; ++v) EXPECT_EQ(r->label[v], 0u) << v;
  EXPECT_EQ(r->label[65], 65u);
  EXPECT_EQ(r->rounds, 1u);
  EXPECT_EQ(l->reader->stats().list_bytes, l->graph.meta.adjacency_entries * 4) << "every list read once";
}

TEST(GraphCc, EdgesPastTheSampledNeighboursJoinSetsOutsideTheLargest) {
  TestDir d;
  // The largest set, a clique over 10..25, is joined by each vertex's
  // first two neighbours. Outside it 5 (neighbours 1, 2, 9) and 9 (3, 4, 5)
  // meet only through their third neighbours, which only the second pass
  // reads: the lists of 5 and 9, and neither the clique's again nor that
  // of 31 (two neighbours, 30 and 32, both taken by the sampling).
  std::vector<std::pair<Vertex, Vertex>> edges = {{5, 1}, {5, 2}, {5, 9}, {9, 3}, {9, 4}, {30, 31}, {31, 32}};
  for (Vertex a = 10; a <= 25; ++a)
    for (Vertex b = a + 1; b <= 25; ++b) edges.push_back({a, b});
  auto l = test::load(test::write_graph(d, "two", 7, edges));
  auto r = run_cc(l->graph, *l->reader);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(validate_cc(l->mem, *r));
  for (Vertex v : {1u, 2u, 3u, 4u, 5u, 9u}) EXPECT_EQ(r->label[v], 1u) << v;
  EXPECT_EQ(r->label[25], 10u);
  EXPECT_EQ(r->label[32], 30u);
  EXPECT_EQ(r->largest, 16u);
  EXPECT_EQ(r->rounds, 2u);
  EXPECT_EQ(l->reader->stats().list_bytes, (l->graph.meta.adjacency_entries + 6) * 4)
      << "every list once, then the lists of 5 and 9";
}

TEST(GraphCc, ValidatorRejectsWrongLabel) {
  TestDir d;
  auto l = test::load(test::write_graph(d, "c", 3, {{7, 3}, {3, 0}}));
  auto r = run_cc(l->graph, *l->reader);
  ASSERT_TRUE(r);
  r->label[7] = 7;
  Status st = validate_cc(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("vertex 7 has component label 7, union-find says 0"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
