// Semi-external delta-stepping against Dijkstra: on weighted graphs (gen's
// weights, hand-made ones with a zero weight) and, with every edge weighing
// 1, against BFS levels.
#include "peregrine/graph/sssp.h"

#include <fcntl.h>
#include <unistd.h>

#include <limits>
#include <vector>

#include "algorithm_fixture.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphSssp, MatchesDijkstraAndBfsLevelsOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 14u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, 300 + scale));
    const Vertex root = default_bfs_root(l->graph);
    auto r = run_sssp(l->graph, *l->reader, root);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_sssp(l->mem, *r);
    EXPECT_TRUE(st) << st.message();
    auto levels = reference_bfs_levels(l->mem, root);
    uint64_t reached = 0;
    for (uint64_t v = 0; v < levels.size(); ++v) {
      reached += levels[v] >= 0;
      const int64_t got = r->distance[v] == SsspResult::kUnreached ? -1 : static_cast<int64_t>(r->distance[v]);
      ASSERT_EQ(got, levels[v]) << "vertex " << v << ": with unit weights a distance is the BFS level";
    }
    EXPECT_EQ(r->reached, reached);
    EXPECT_GT(r->reached, l->graph.num_vertices() / 2);
    // Delta 1 and unit weights: one bucket per level, settled in one round.
    EXPECT_EQ(r->buckets, r->max_distance + 1);
    EXPECT_EQ(r->rounds, r->buckets);
  }
}

TEST(GraphSssp, WideBucketsAndListsInPiecesGiveTheSameDistances) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 12, 7), test::tiny_reads());
  const Vertex root = default_bfs_root(l->graph);
  auto narrow = run_sssp(l->graph, *l->reader, root);
  ASSERT_TRUE(narrow) << narrow.status().message();
  for (uint64_t delta : {2u, 3u, 1000u}) {
    auto wide = run_sssp(l->graph, *l->reader, root, SsspOptions{delta});
    ASSERT_TRUE(wide) << wide.status().message();
    EXPECT_EQ(wide->distance, narrow->distance) << "delta " << delta;
    EXPECT_TRUE(validate_sssp(l->mem, *wide)) << "delta " << delta;
    // A bucket spans `delta` distances: fewer buckets, a round per level
    // inside each.
    EXPECT_EQ(wide->buckets, narrow->max_distance / delta + 1) << "delta " << delta;
    EXPECT_EQ(wide->rounds, narrow->rounds) << "delta " << delta;
  }
}

TEST(GraphSssp, ExactOnASmallGraphWithAnUnreachedPart) {
  TestDir d;
  // 0-1-2-3 and a chord 0-3; 4-5 apart; 6 and 7 isolated.
  auto l = test::load(test::write_graph(d, "s", 3, {{0, 1}, {1, 2}, {2, 3}, {0, 3}, {4, 5}}));
  auto r = run_sssp(l->graph, *l->reader, 1);
  ASSERT_TRUE(r) << r.status().message();
  const uint64_t u = SsspResult::kUnreached;
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{1, 0, 1, 2, u, u, u, u}));
  EXPECT_EQ(r->reached, 4u);
  EXPECT_EQ(r->max_distance, 2u);
  EXPECT_EQ(r->relaxations, 3u);
}

TEST(GraphSssp, WeightedKroneckerGraphsMatchDijkstraForAnyDelta) {
  TestDir d;
  auto l = test::load(test::generate(d, "w", 12, 11, /*weighted=*/true), [] {
    ReaderOptions o = test::tiny_reads();
    o.weights = true;
    return o;
  }());
  const Vertex root = default_bfs_root(l->graph);
  std::vector<uint64_t> first;
  for (uint64_t delta : {1u, 7u, 255u, 100000u}) {
    auto r = run_sssp(l->graph, *l->reader, root, SsspOptions{delta});
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_sssp(l->mem, *r);
    EXPECT_TRUE(st) << "delta " << delta << ": " << st.message();
    if (first.empty()) first = r->distance;
    EXPECT_EQ(r->distance, first) << "delta " << delta;
    EXPECT_GT(r->max_distance, 255u) << "paths of several weighted edges";
  }
}

// Over kept lists the rounds run on several threads: the distances are
// those read from the file, for any delta and thread count; the default
// delta narrows to 1/128 of the largest weight; a weight above the
// graph's stated largest is refused at the load.
TEST(GraphSssp, KeptListsOnSeveralThreadsGiveTheSameDistances) {
  TestDir d;
  const auto dir = test::generate(d, "w", 12, 13, /*weighted=*/true);
  ReaderOptions o;
  o.weights = true;
  auto read = test::load(dir, o);
  const Vertex root = default_bfs_root(read->graph);
  auto want = run_sssp(read->graph, *read->reader, root);
  ASSERT_TRUE(want) << want.status().message();
  EXPECT_EQ(want->delta, read->graph.meta.max_weight);
  o.keep_bytes = 1ULL << 30;
  for (uint64_t delta : {0u, 1u, 7u, 255u}) {
    for (uint32_t threads : {1u, 2u, 5u}) {
      SCOPED_TRACE("delta " + std::to_string(delta) + ", " + std::to_string(threads) + " threads");
      auto kept = test::load(dir, o);
      SsspOptions options{delta};
      options.threads = threads;
      auto r = run_sssp(kept->graph, *kept->reader, root, options);
      ASSERT_TRUE(r) << r.status().message();
      EXPECT_TRUE(kept->reader->kept());
      if (delta == 0) {
        EXPECT_EQ(r->delta, std::max<uint64_t>(1, kept->graph.meta.max_weight / 128));
      }
      EXPECT_EQ(r->distance, want->distance);
      EXPECT_EQ(r->reached, want->reached);
      EXPECT_EQ(r->max_distance, want->max_distance);
      Status st = validate_sssp(kept->mem, *r);
      EXPECT_TRUE(st) << st.message();
    }
  }
  // The farthest a relaxation files a vertex: dv = 6 in bucket 0 of width
  // 7, plus 255, lands in bucket 37 = 255 / 7 + 1, past a ring of 37 slots.
  auto far = test::load(test::write_weighted_graph(d, "far", 3, {{0, 1, 6}, {1, 2, 255}, {2, 3, 1}}), o);
  SsspOptions seven{7};
  auto r = run_sssp(far->graph, *far->reader, 0, seven);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(far->reader->kept());
  const uint64_t u = SsspResult::kUnreached;
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{0, 6, 261, 262, u, u, u, u}));

  // The largest weight is 255 in a generated graph: one above, in the file.
  int fd = ::open((dir / kWeightsFile).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const uint32_t heavy = read->graph.meta.max_weight + 1;
  ASSERT_EQ(::pwrite(fd, &heavy, 4, 4 * 100), 4);
  ::close(fd);
  auto kept = test::load(dir, o);
  r = run_sssp(kept->graph, *kept->reader, root);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("weights.u32: corrupt: entry 100 weighs 256, above the graph's max_weight 255"),
            std::string::npos)
      << r.status().message();
}

// Over kept lists, paths longer than 32 bits can hold: chains just under
// UINT32_MAX and far past it.
TEST(GraphSssp, KeptDistancesPastThirtyTwoBitsAreExact) {
  TestDir d;
  ReaderOptions o;
  o.weights = true;
  o.keep_bytes = 1ULL << 30;
  // 8 vertices: 7 edges of (2^32 - 2) / 8 each reach 3,758,096,377.
  const uint32_t edge = (std::numeric_limits<uint32_t>::max() - 1) / 8;
  std::vector<test::WeightedEdge> chain;
  for (Vertex v = 0; v < 7; ++v) chain.push_back({v, v + 1, edge});
  auto narrow = test::load(test::write_weighted_graph(d, "narrow", 3, chain), o);
  auto r = run_sssp(narrow->graph, *narrow->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_TRUE(narrow->reader->kept());
  for (uint64_t v = 0; v < 8; ++v) EXPECT_EQ(r->distance[v], v * edge) << "vertex " << v;
  // Three edges of 4e9: 12e9 at the end, far past 32 bits.
  auto wide = test::load(
      test::write_weighted_graph(d, "wide", 3, {{0, 1, 4000000000u}, {1, 2, 4000000000u}, {2, 3, 4000000000u}}), o);
  r = run_sssp(wide->graph, *wide->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_TRUE(wide->reader->kept());
  const uint64_t u = SsspResult::kUnreached;
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{0, 4000000000u, 8000000000u, 12000000000u, u, u, u, u}));
  EXPECT_TRUE(validate_sssp(wide->mem, *r));
}

TEST(GraphSssp, ExactOnASmallWeightedGraph) {
  TestDir d;
  // 0-1 weighs 4 but 0-2-1 only 3; 1-3 (5) beats 2-3 (8); 3-4 weighs 0; 5 apart.
  auto l = test::load(test::write_weighted_graph(
                          d, "w", 3, {{0, 1, 4}, {0, 2, 1}, {2, 1, 2}, {1, 3, 5}, {2, 3, 8}, {3, 4, 0}, {5, 6, 1}}),
                      [] {
                        ReaderOptions o;
                        o.weights = true;
                        return o;
                      }());
  auto r = run_sssp(l->graph, *l->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  const uint64_t u = SsspResult::kUnreached;
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{0, 3, 1, 8, 8, u, u, u}));
  EXPECT_EQ(r->reached, 5u);
  EXPECT_EQ(r->max_distance, 8u);
  EXPECT_TRUE(validate_sssp(l->mem, *r));
  // Without the weights' reader a weighted graph is refused, not run as unweighted.
  auto plain = AdjacencyReader::open(l->graph, ReaderOptions{});
  ASSERT_TRUE(plain);
  auto refused = run_sssp(l->graph, **plain, 0);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("needs a reader of its weights"), std::string::npos)
      << refused.status().message();
}

TEST(GraphSssp, RefusesABadRoot) {
  TestDir d;
  auto l = test::load(test::write_graph(d, "s", 2, {{0, 1}}));
  auto r = run_sssp(l->graph, *l->reader, 4);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("root 4 out of range"), std::string::npos) << r.status().message();
}

TEST(GraphSssp, DeltaZeroIsTheLargestWeight) {
  TestDir d;
  auto unweighted = test::load(test::write_graph(d, "u", 2, {{0, 1}}));
  auto r = run_sssp(unweighted->graph, *unweighted->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->delta, 1u);
  ReaderOptions o;
  o.weights = true;
  auto weighted = test::load(test::write_weighted_graph(d, "w", 2, {{0, 1, 7}, {1, 2, 40}, {2, 3, 3}}), o);
  EXPECT_EQ(weighted->graph.meta.max_weight, 40u);
  r = run_sssp(weighted->graph, *weighted->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->delta, 40u);
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{0, 7, 47, 50}));
  r = run_sssp(weighted->graph, *weighted->reader, 0, SsspOptions{5});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->delta, 5u);
  EXPECT_EQ(r->distance, (std::vector<uint64_t>{0, 7, 47, 50}));
}

TEST(GraphSssp, ValidatorRejectsAWrongDistance) {
  TestDir d;
  auto l = test::load(test::write_graph(d, "s", 3, {{0, 1}, {1, 2}}));
  auto r = run_sssp(l->graph, *l->reader, 0);
  ASSERT_TRUE(r);
  r->distance[2] = 1;
  Status st = validate_sssp(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("vertex 2 has distance 1, Dijkstra's is 2"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
