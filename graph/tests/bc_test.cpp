// Semi-external betweenness against Brandes' algorithm as published
// (reference.h), on small graphs worked by hand and on Kronecker graphs.
#include "peregrine/graph/bc.h"

#include "algorithm_fixture.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphBc, ExactOnAPathAndADiamond) {
  TestDir d;
  // Path 0-1-2-3 and a diamond 4-{5,6}-7; 8..15 isolated.
  auto l = test::load(test::write_graph(d, "b", 4, {{0, 1}, {1, 2}, {2, 3}, {4, 5}, {4, 6}, {5, 7}, {6, 7}}));
  auto r = run_bc(l->graph, *l->reader, {0, 4});
  ASSERT_TRUE(r) << r.status().message();
  // From 0: 1 lies on the paths to 2 and 3, 2 on the one to 3. From 4:
  // each of 5 and 6 carries half of the two shortest paths to 7.
  std::vector<double> want(16, 0.0);
  want[1] = 2;
  want[2] = 1;
  want[5] = 0.5;
  want[6] = 0.5;
  EXPECT_EQ(r->score, want);
  EXPECT_EQ(reference_bc(l->mem, {0, 4}), want);
  EXPECT_EQ(r->levels, 4u + 3u);
}

// Over kept lists each level runs on several threads: the scores are
// those read from the file, bit for bit (directed graphs: the networkx
// results test runs dcycle both ways).
TEST(GraphBc, KeptListsOnSeveralThreadsGiveTheSameScores) {
  TestDir d;
  const auto dir = test::generate(d, "g", 12, 23);
  auto read = test::load(dir);
  auto sources = pick_bfs_roots(read->graph, default_bfs_root(read->graph), 3);
  auto want = run_bc(read->graph, *read->reader, sources);
  ASSERT_TRUE(want) << want.status().message();
  for (uint32_t threads : {1u, 2u, 5u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    auto kept = test::load(dir, test::kept_lists());
    auto r = run_bc(kept->graph, *kept->reader, sources, threads);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_TRUE(kept->reader->kept());
    EXPECT_EQ(r->score, want->score);
    EXPECT_EQ(r->levels, want->levels);
    Status st = validate_bc(kept->mem, *r);
    EXPECT_TRUE(st) << st.message();
  }
}

TEST(GraphBc, MatchesBrandesOnKroneckerGraphsFromSeveralSources) {
  TestDir d;
  for (uint32_t scale : {10u, 12u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, 300 + scale));
    auto sources = pick_bfs_roots(l->graph, default_bfs_root(l->graph), 4);
    auto r = run_bc(l->graph, *l->reader, sources);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_bc(l->mem, *r);
    EXPECT_TRUE(st) << st.message();
    double top = 0;
    for (double x : r->score) top = std::max(top, x);
    EXPECT_GT(top, 100.0) << "hubs carry many shortest paths";
  }
}

TEST(GraphBc, ListsInPiecesGiveTheSameScores) {
  TestDir d;
  const auto dir = test::generate(d, "g", 11, 9);
  auto l = test::load(dir, test::tiny_reads());
  auto r = run_bc(l->graph, *l->reader, {default_bfs_root(l->graph)});
  ASSERT_TRUE(r) << r.status().message();
  Status st = validate_bc(l->mem, *r);
  EXPECT_TRUE(st) << st.message();
}

TEST(GraphBc, RefusesASourceOutOfRangeAndTheValidatorAWrongScore) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 10));
  auto bad = run_bc(l->graph, *l->reader, {5000});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("source 5000 out of range"), std::string::npos) << bad.status().message();
  auto r = run_bc(l->graph, *l->reader, {default_bfs_root(l->graph)});
  ASSERT_TRUE(r);
  r->score[7] += 0.5;
  Status st = validate_bc(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("vertex 7 has betweenness"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
