// Semi-external triangle counting against the node iterator of reference.h,
// in one batch and in many, and with lists that arrive in pieces.
#include "peregrine/graph/tc.h"

#include "algorithm_fixture.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphTc, ExactOnSmallGraph) {
  TestDir d;
  // A 4-clique {0,1,2,3} (4 triangles), a triangle {4,5,6} hanging off 3,
  // a square 8-9-10-11 (no triangle), 12..15 isolated.
  auto l = test::load(test::write_graph(d, "t", 4,
                                        {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}, {3, 4}, {4, 5}, {5, 6},
                                         {4, 6}, {8, 9}, {9, 10}, {10, 11}, {11, 8}}));
  TcOptions o;
  o.per_vertex = true;
  auto r = run_tc(l->graph, *l->reader, o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->triangles, 5u);
  std::vector<uint64_t> want = {3, 3, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(r->per_vertex, want);
  EXPECT_EQ(reference_triangles(l->mem), want);
}

TEST(GraphTc, MatchesTheNodeIteratorOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 12u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, 200 + scale));
    TcOptions o;
    o.per_vertex = true;
    auto r = run_tc(l->graph, *l->reader, o);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_tc(l->mem, *r);
    EXPECT_TRUE(st) << st.message();
    EXPECT_GT(r->triangles, 1000u) << "a Kronecker graph of scale " << scale << " is dense with triangles";
    EXPECT_EQ(r->batches, 1u);
  }
}

TEST(GraphTc, ManyBatchesAndListsInPiecesCountTheSame) {
  TestDir d;
  const auto dir = test::generate(d, "g", 11, 7);
  auto whole = test::load(dir);
  auto one = run_tc(whole->graph, *whole->reader);
  ASSERT_TRUE(one) << one.status().message();
  auto l = test::load(dir, test::tiny_reads());
  TcOptions o;
  o.batch_entries = 500;
  o.per_vertex = true;
  auto many = run_tc(l->graph, *l->reader, o);
  ASSERT_TRUE(many) << many.status().message();
  EXPECT_GT(many->batches, 10u);
  EXPECT_EQ(many->triangles, one->triangles);
  Status st = validate_tc(l->mem, *many);
  EXPECT_TRUE(st) << st.message();
}

TEST(GraphTc, ValidatorRejectsAWrongCount) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 10));
  TcOptions o;
  o.per_vertex = true;
  auto r = run_tc(l->graph, *l->reader, o);
  ASSERT_TRUE(r);
  r->per_vertex[3] += 1;
  Status st = validate_tc(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("vertex 3 is in"), std::string::npos) << st.message();
  r->triangles += 1;
  st = validate_tc(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("triangles, the node iterator finds"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
