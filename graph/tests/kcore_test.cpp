// Semi-external k-core against Batagelj-Zaversnik peeling.
#include "peregrine/graph/kcore.h"

#include "algorithm_fixture.h"
#include "peregrine/graph/reference.h"
#include "peregrine/graph/validate.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

TEST(GraphKcore, MatchesPeelingOnKroneckerGraphs) {
  TestDir d;
  for (uint32_t scale : {10u, 13u}) {
    auto l = test::load(test::generate(d, "g" + std::to_string(scale), scale, 100 + scale));
    auto r = run_kcore(l->graph, *l->reader);
    ASSERT_TRUE(r) << r.status().message();
    Status st = validate_kcore(l->mem, *r);
    EXPECT_TRUE(st) << st.message();
    EXPECT_GT(r->max_core, 5u);
    // Every list is read exactly once over the whole peeling.
    EXPECT_EQ(l->reader->stats().list_bytes, l->graph.meta.adjacency_entries * 4);
  }
}

TEST(GraphKcore, ExactOnSmallGraph) {
  TestDir d;
  // A 4-clique {0,1,2,3}, a triangle {4,5,6} hanging off 3 by 3-4, a
  // pendant 7-6, and 8..15 isolated.
  auto l = test::load(test::write_graph(
      d, "k", 4, {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {4, 6}, {6, 7}}));
  auto r = run_kcore(l->graph, *l->reader);
  ASSERT_TRUE(r) << r.status().message();
  std::vector<uint32_t> want = {3, 3, 3, 3, 2, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(r->core, want);
  EXPECT_EQ(reference_core_numbers(l->mem), want);
  EXPECT_EQ(r->max_core, 3u);
}

TEST(GraphKcore, ValidatorRejectsWrongCore) {
  TestDir d;
  auto l = test::load(test::generate(d, "g", 10));
  auto r = run_kcore(l->graph, *l->reader);
  ASSERT_TRUE(r);
  r->core[5] += 1;
  Status st = validate_kcore(l->mem, *r);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("vertex 5 has core number"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace peregrine::graph
