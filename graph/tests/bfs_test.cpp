// Semi-external BFS against the Graph500 validation rules.
#include "peregrine/graph/bfs.h"

#include <set>

#include "algorithm_fixture.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphBfs, ValidOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 14u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, scale));
    Vertex root = default_bfs_root(l->graph);
    auto r = run_bfs(l->graph, *l->reader, root);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_bfs(l->mem, *r);
    EXPECT_TRUE(st) << st.message();
    EXPECT_GT(r->reached, l->graph.num_vertices() / 2) << "the hub's component is the giant one";
    EXPECT_GT(r->levels, 2u);
    EXPECT_GT(l->reader->stats().reads, 0u);
  }
}

TEST(GraphBfs, ValidFromSeveralRootsWithTinyReads) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 12, 2), test::tiny_reads());
  for (Vertex root : {0u, 1u, 77u, 4095u}) {
    auto r = run_bfs(l->graph, *l->reader, root);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_bfs(l->mem, *r);
    EXPECT_TRUE(st) << "root " << root << ": " << st.message();
  }
}

TEST(GraphBfs, PicksDistinctDeterministicRoots) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 11, 4));
  Vertex first = default_bfs_root(l->graph);
  auto roots = pick_bfs_roots(l->graph, first, 16);
  ASSERT_EQ(roots.size(), 16u);
  EXPECT_EQ(roots[0], first);
  EXPECT_EQ(std::set<Vertex>(roots.begin(), roots.end()).size(), 16u);
  for (Vertex r : roots) EXPECT_GT(l->graph.degree(r), 0u) << r;
  EXPECT_EQ(pick_bfs_roots(l->graph, first, 16), roots);
  // A graph with few vertices that have edges yields only those.
  auto tiny = test::load(test::write_graph(d, "t", 3, {{1, 2}, {2, 5}}));
  EXPECT_EQ(pick_bfs_roots(tiny->graph, 2, 10).size(), 3u);
}

// Direction-optimising: the widest levels of a Kronecker graph go
// bottom-up and read fewer list entries; the levels are those of the
// top-down search, and both trees pass the Graph500 rules, also when lists
// arrive in pieces.
TEST(GraphBfs, WidestLevelsGoBottomUpWithTheSameDepths) {
  TestDir d;
  const auto dir = test::generate(d, "g", 13, 5);
  for (const ReaderOptions& o : {ReaderOptions{}, test::tiny_reads()}) {
    auto down = test::load(dir, o);
    auto opt = test::load(dir, o);
    const Vertex root = default_bfs_root(down->graph);
    auto a = run_bfs(down->graph, *down->reader, root, BfsDirection::kTopDown);
    auto b = run_bfs(opt->graph, *opt->reader, root, BfsDirection::kOptimising);
    ASSERT_TRUE(a) << a.status().message();
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_EQ(a->bottom_up_levels, 0u);
    EXPECT_GT(b->bottom_up_levels, 0u);
    EXPECT_EQ(b->depth, a->depth);
    EXPECT_EQ(b->reached, a->reached);
    EXPECT_EQ(b->levels, a->levels);
    EXPECT_EQ(b->component_edges, a->component_edges);
    EXPECT_LT(opt->reader->stats().list_bytes, down->reader->stats().list_bytes);
    Status st = validate_bfs(opt->mem, *b);
    EXPECT_TRUE(st) << st.message();
  }
}

// Over kept lists each level runs on several threads: the depths, the
// counts and the levels are those of the search that reads the file, and
// each tree passes the Graph500 rules, in both directions.
TEST(GraphBfs, KeptListsOnSeveralThreadsGiveTheSameDepths) {
  TestDir d;
  const auto dir = test::generate(d, "g", 13, 9);
  auto read = test::load(dir);
  for (BfsDirection direction : {BfsDirection::kOptimising, BfsDirection::kTopDown}) {
    for (Vertex root : {default_bfs_root(read->graph), Vertex{77}}) {
      auto want = run_bfs(read->graph, *read->reader, root, direction);
      ASSERT_TRUE(want) << want.status().message();
      for (uint32_t threads : {1u, 2u, 5u}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, root " + std::to_string(root));
        auto kept = test::load(dir, test::kept_lists());
        auto r = run_bfs(kept->graph, *kept->reader, root, direction, threads);
        ASSERT_TRUE(r) << r.status().message();
        EXPECT_TRUE(kept->reader->kept());
        EXPECT_EQ(r->depth, want->depth);
        EXPECT_EQ(r->reached, want->reached);
        EXPECT_EQ(r->levels, want->levels);
        EXPECT_EQ(r->component_edges, want->component_edges);
        EXPECT_EQ(r->bottom_up_levels, want->bottom_up_levels);
        Status st = validate_bfs(kept->mem, *r);
        EXPECT_TRUE(st) << st.message();
      }
    }
  }
}

TEST(GraphBfs, ExactOnPath) {
  TestDir d;
  // 0-1-2-3 and a separate edge 5-6.
  auto l = test::load(test::write_graph(d, "p", 3, {{0, 1}, {1, 2}, {2, 3}, {5, 6}}));
  auto r = run_bfs(l->graph, *l->reader, 0);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->parent, (std::vector<int64_t>{0, 0, 1, 2, -1, -1, -1, -1}));
  EXPECT_EQ(r->reached, 4u);
  EXPECT_EQ(r->component_edges, 3u);
  EXPECT_TRUE(validate_bfs(l->mem, *r));
}

TEST(GraphBfs, ValidatorRejectsBrokenTrees) {
  TestDir d;
  auto l = test::load(test::write_graph(d, "p", 3, {{0, 1}, {1, 2}, {2, 3}, {0, 3}, {5, 6}}));
  auto good = run_bfs(l->graph, *l->reader, 0);
  ASSERT_TRUE(good);
  ASSERT_TRUE(validate_bfs(l->mem, *good));

  auto wrong_level = *good;  // 3's parent 2 is a real edge, but 3 is at level 1
  wrong_level.parent[3] = 2;
  wrong_level.parent[2] = 1;
  Status st = validate_bfs(l->mem, wrong_level);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("tree depth"), std::string::npos) << st.message();

  auto non_edge = *good;
  non_edge.parent[2] = 0;  // 0-2 is not an edge
  st = validate_bfs(l->mem, non_edge);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("not in the graph"), std::string::npos) << st.message();

  auto extra = *good;
  extra.parent[5] = 6;
  extra.parent[6] = 5;
  extra.reached += 2;
  st = validate_bfs(l->mem, extra);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("cycle"), std::string::npos) << st.message();

  auto missed = *good;
  missed.parent[3] = -1;
  missed.reached -= 1;
  st = validate_bfs(l->mem, missed);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("not reached"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
