// Semi-external PageRank against in-memory power iteration (L1 <= 1e-6).
#include "peregrine/graph/pagerank.h"

#include <cmath>
#include <numeric>

#include "algorithm_fixture.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphPagerank, MatchesPowerIterationOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 13u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, 300 + scale));
    PagerankOptions o;
    o.max_iterations = 15;
    o.epsilon = 0;
    auto r = run_pagerank(l->graph, *l->reader, o);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->iterations, 15u);
    double l1 = 1;
    Status st = validate_pagerank(l->mem, *r, o.damping, &l1);
    EXPECT_TRUE(st) << st.message();
    EXPECT_LE(l1, 1e-6);
    double total = std::accumulate(r->rank.begin(), r->rank.end(), 0.0);
    EXPECT_NEAR(total, 1.0, 1e-9) << "rank mass must be conserved";
    // Each iteration is one full sweep of the adjacency.
    EXPECT_EQ(l->reader->stats().list_bytes, 15 * l->graph.meta.adjacency_entries * 4);
  }
}

// Over kept lists the sweeps run on several threads: the ranks are the
// ones read from the file, bit for bit, whatever the thread count, and
// the file is read once. The threads take blocks of 256 vertices one at a
// time, so both graphs' sweeps and sums are split among them; the second
// (2^17 vertices) has hundreds of blocks.
TEST(GraphPagerank, KeptListsOnSeveralThreadsGiveTheSameRanks) {
  TestDir d;
  for (uint32_t scale : {13u, 17u}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    const auto dir = test::generate(d, "g" + std::to_string(scale), scale, 17);
    auto read = test::load(dir);
    PagerankOptions o;
    o.max_iterations = 12;
    o.epsilon = 0;
    auto want = run_pagerank(read->graph, *read->reader, o);
    ASSERT_TRUE(want) << want.status().message();
    for (uint32_t threads : {1u, 2u, 5u}) {
      auto kept = test::load(dir, test::kept_lists());
      o.threads = threads;
      auto r = run_pagerank(kept->graph, *kept->reader, o);
      ASSERT_TRUE(r) << r.status().message();
      EXPECT_TRUE(kept->reader->kept());
      EXPECT_EQ(r->rank, want->rank) << threads << " threads";
      EXPECT_EQ(r->last_delta, want->last_delta);
      EXPECT_EQ(kept->reader->stats().bytes, kept->graph.meta.adjacency_entries * 4) << "one read of the file";
    }
  }
}

TEST(GraphPagerank, ConvergesAndStopsEarly) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 11));
  PagerankOptions o;
  o.max_iterations = 200;
  o.epsilon = 1e-10;
  auto r = run_pagerank(l->graph, *l->reader, o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_LT(r->iterations, 200u);
  EXPECT_LT(r->last_delta, 1e-10);
  EXPECT_TRUE(validate_pagerank(l->mem, *r, o.damping));
}

TEST(GraphPagerank, ExactOnStar) {
  TestDir d;
  // Star: centre 0 with leaves 1..3, vertices 4..7 isolated (dangling).
  auto l = test::load(test::write_graph(d, "s", 3, {{0, 1}, {0, 2}, {0, 3}}));
  PagerankOptions o;
  o.max_iterations = 1;
  o.epsilon = 0;
  auto r = run_pagerank(l->graph, *l->reader, o);
  ASSERT_TRUE(r) << r.status().message();
  // One step from uniform 1/8: dangling mass 4/8 spread evenly.
  const double d8 = 0.85, n = 8, base = (1 - d8) / n + d8 * 0.5 / n;
  EXPECT_NEAR(r->rank[0], base + d8 * 3 * (1 / n), 1e-15);
  EXPECT_NEAR(r->rank[1], base + d8 * (1 / n) / 3, 1e-15);
  EXPECT_NEAR(r->rank[4], base, 1e-15);
}

TEST(GraphPagerank, ValidatorRejectsPerturbedRanks) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 10));
  PagerankOptions o;
  o.max_iterations = 5;
  auto r = run_pagerank(l->graph, *l->reader, o);
  ASSERT_TRUE(r);
  r->rank[3] += 2e-6;
  Status st = validate_pagerank(l->mem, *r, o.damping);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("L1"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
