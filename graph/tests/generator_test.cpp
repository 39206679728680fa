// gen: the graph is a pure function of (scale, edgefactor, seed), whatever
// the memory budget or thread count, and its counts add up.
#include <gtest/gtest.h>

#include <set>

#include "graph_test_dir.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/generator.h"
#include "peregrine/graph/memory_graph.h"
#include "peregrine/graph/kronecker.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

std::filesystem::path gen(const TestDir& d, const std::string& name, uint32_t scale, uint64_t seed,
                          uint64_t memory = 1ULL << 30, unsigned threads = 0) {
  GenOptions o;
  o.scale = scale;
  o.seed = seed;
  o.memory_bytes = memory;
  o.threads = threads;
  auto out = d.path() / name;
  auto meta = generate_graph(o, out);
  EXPECT_TRUE(meta) << meta.status().message();
  return out;
}

void expect_same_files(const std::filesystem::path& a, const std::filesystem::path& b) {
  for (const char* f : {kMetaFile, kIndexFile, kAdjacencyFile})
    EXPECT_EQ(test::read_file(a / f), test::read_file(b / f)) << f;
}

TEST(GraphGenerator, SameSeedGivesSameBytes) {
  TestDir d;
  expect_same_files(gen(d, "a", 12, 7), gen(d, "b", 12, 7));
}

TEST(GraphGenerator, DifferentSeedGivesDifferentGraph) {
  TestDir d;
  auto a = gen(d, "a", 12, 7);
  auto b = gen(d, "b", 12, 8);
  EXPECT_NE(test::read_file(a / kAdjacencyFile), test::read_file(b / kAdjacencyFile));
  EXPECT_NE(test::read_file(a / kIndexFile), test::read_file(b / kIndexFile));
}

// --weighted adds weights.u32 and changes nothing else of the graph: the
// same lists, a weight in [1, 255] per entry, one weight per undirected
// edge, a pure function of the seed.
TEST(GraphGenerator, WeightsLeaveTheListsAloneAndAgreeBothWays) {
  TestDir d;
  auto plain = test::generate(d, "plain", 12, 5);
  auto a = test::generate(d, "a", 12, 5, /*weighted=*/true);
  auto b = test::generate(d, "b", 12, 5, /*weighted=*/true);
  for (const char* f : {kIndexFile, kAdjacencyFile}) EXPECT_EQ(test::read_file(plain / f), test::read_file(a / f)) << f;
  EXPECT_FALSE(std::filesystem::exists(plain / kWeightsFile));
  EXPECT_EQ(test::read_file(a / kWeightsFile), test::read_file(b / kWeightsFile));
  auto g = open_graph(a);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_TRUE(g->weighted());
  EXPECT_EQ(g->meta.format_version, kWeightedFormatVersion);
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m) << m.status().message();
  m->graph = &*g;
  ASSERT_EQ(m->weights.size(), g->meta.adjacency_entries);
  std::set<uint32_t> seen;
  for (uint64_t u = 0; u < g->num_vertices(); ++u) {
    const auto nbrs = m->neighbours(u);
    for (size_t i = 0; i < nbrs.size(); ++i) {
      const uint32_t w = m->weights_of(u)[i];
      ASSERT_GE(w, 1u);
      ASSERT_LE(w, kMaxGeneratedWeight);
      ASSERT_EQ(w, generated_weight(5, static_cast<Vertex>(u), nbrs[i]));
      seen.insert(w);
    }
  }
  EXPECT_GT(seen.size(), 200u) << "weights spread over [1, 255]";
  EXPECT_TRUE(check_graph(*m));  // checksums, symmetry, one weight per edge
  EXPECT_EQ(generated_weight(5, 1, 2), generated_weight(5, 2, 1));
  // A regenerated unweighted graph leaves no weights behind.
  test::generate(d, "a", 12, 5);
  EXPECT_FALSE(std::filesystem::exists(a / kWeightsFile));
  EXPECT_FALSE(open_graph(a)->weighted());
}

TEST(GraphGenerator, MemoryBudgetAndThreadsDoNotChangeTheGraph) {
  TestDir d;
  // 64 KiB holds 8192 keys: scale 12 samples 65536 edges = 131072 keys, so
  // this build sorts and merges 16 runs, against 1 run for the big budget.
  auto big = gen(d, "big", 12, 3, 1ULL << 30, 2);
  auto small = gen(d, "small", 12, 3, 64 * 1024, 1);
  expect_same_files(big, small);
}

TEST(GraphGenerator, MetadataCountsMatchFiles) {
  TestDir d;
  auto dir = gen(d, "g", 11, 5);
  auto meta = read_meta(dir);
  ASSERT_TRUE(meta) << meta.status().message();
  EXPECT_EQ(meta->format_version, kFormatVersion);
  EXPECT_EQ(meta->scale, 11u);
  EXPECT_EQ(meta->edgefactor, 16u);
  EXPECT_EQ(meta->seed, 5u);
  EXPECT_EQ(meta->vertices, 2048u);
  EXPECT_EQ(meta->sampled_edges, 16u * 2048);
  // Loops and duplicates are removed, so fewer edges survive, but most do.
  EXPECT_LT(meta->edges, meta->sampled_edges);
  EXPECT_GT(meta->edges, meta->sampled_edges / 2);
  EXPECT_EQ(meta->adjacency_entries, 2 * meta->edges);
  EXPECT_EQ(std::filesystem::file_size(dir / kAdjacencyFile), meta->adjacency_entries * 4);
  EXPECT_EQ(std::filesystem::file_size(dir / kIndexFile), (meta->vertices + 1) * 8);
  // No run files left behind.
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 3u);
}

TEST(GraphGenerator, KroneckerSkewFollowsInitiator) {
  // Before relabelling, quadrant A (both bits 0) is chosen with p=0.57 at
  // each level; measured on labels that is invisible, so check the degree
  // skew instead: the highest-degree vertex has far more than the average.
  TestDir d;
  auto dir = gen(d, "g", 12, 1);
  auto g = open_graph(dir);
  ASSERT_TRUE(g) << g.status().message();
  uint64_t max_deg = 0;
  for (uint64_t v = 0; v < g->num_vertices(); ++v) max_deg = std::max(max_deg, g->degree(v));
  double avg = static_cast<double>(g->meta.adjacency_entries) / static_cast<double>(g->num_vertices());
  EXPECT_GT(static_cast<double>(max_deg), 10 * avg);
}

TEST(GraphGenerator, SamplerIsAPureFunctionOfIndex) {
  KroneckerSampler s(16, 42);
  auto e = s.edge(12345);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.edge(12345), e);
  KroneckerSampler other(16, 43);
  int differ = 0;
  for (uint64_t i = 0; i < 64; ++i) differ += s.edge(i) != other.edge(i);
  EXPECT_GT(differ, 32);
  for (uint64_t i = 0; i < 1000; ++i) {
    auto [u, v] = s.edge(i);
    EXPECT_LT(u, 1u << 16);
    EXPECT_LT(v, 1u << 16);
  }
}

TEST(GraphGenerator, RejectsBadOptions) {
  TestDir d;
  GenOptions o;
  o.scale = 0;
  auto r = generate_graph(o, d.path() / "x");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("scale must be between 1 and 32"), std::string::npos);
  o.scale = 33;
  EXPECT_FALSE(generate_graph(o, d.path() / "x"));
  o.scale = 10;
  o.memory_bytes = 1000;
  r = generate_graph(o, d.path() / "x");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("memory budget"), std::string::npos);
}

}  // namespace
}  // namespace peregrine::graph

namespace peregrine::graph {
namespace {

TEST(GraphGenerator, LabelPermutationIsABijection) {
  for (uint32_t scale : {1u, 2u, 7u, 12u}) {
    LabelPermutation p(scale, 99);
    std::vector<bool> seen(1u << scale, false);
    for (uint64_t x = 0; x < (1u << scale); ++x) {
      uint64_t y = p(x);
      ASSERT_LT(y, 1u << scale);
      EXPECT_FALSE(seen[y]) << "scale " << scale << " maps two labels to " << y;
      seen[y] = true;
    }
  }
}

}  // namespace
}  // namespace peregrine::graph
