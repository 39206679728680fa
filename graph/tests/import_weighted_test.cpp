// import of weighted edge lists (text's third column, GAP's .wel, DIMACS
// .gr, Matrix Market 'integer'): every edge keeps its weight, a duplicate
// its smallest, through every path the edges take (held in memory, a
// stream's scratch file, a file parsed again); bad weights name the file
// and line; the sorted runs keep the smallest weight of a key.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>

#include "expect_valid_graph.h"
#include "fifo_input.h"
#include "graph_test_dir.h"
#include "peregrine/graph/edge_runs.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/importer.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {
namespace {

using test::FifoInput;
using test::TestDir;

std::filesystem::path write(const TestDir& d, const std::string& name, const std::string& text) {
  auto p = d.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

Expected<GraphMeta> import(const std::filesystem::path& in, const std::filesystem::path& out, bool weighted,
                           bool directed = false, InputFormat f = InputFormat::kAuto, uint64_t memory = 1ULL << 30,
                           uint64_t max_slice_ids = 0) {
  ImportOptions o;
  o.format = f;
  o.directed = directed;
  o.weighted = weighted;
  o.memory_bytes = memory;
  o.max_slice_ids = max_slice_ids;
  return import_graph(in, o, out);
}

std::string import_error(const std::filesystem::path& in, const TestDir& d, bool weighted = true,
                         InputFormat f = InputFormat::kAuto) {
  auto m = import(in, d.path() / "bad", weighted, false, f);
  EXPECT_FALSE(m) << in << " imported";
  return m ? "" : m.status().message();
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// The graph's arcs in the input's ids with their weights.
std::map<std::pair<uint64_t, uint64_t>, uint32_t> weighted_arcs(const std::filesystem::path& dir) {
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> arcs;
  auto g = open_graph(dir);
  EXPECT_TRUE(g) << g.status().message();
  if (!g) return arcs;
  EXPECT_TRUE(g->weighted());
  auto m = load_memory_graph(*g);
  EXPECT_TRUE(m) << m.status().message();
  m->graph = &*g;
  auto ids = IdMap::load(*g);
  EXPECT_TRUE(ids);
  for (uint64_t u = 0; u < g->num_vertices(); ++u)
    for (size_t i = 0; i < m->neighbours(u).size(); ++i)
      arcs[{ids->user_id(u), ids->user_id(m->neighbours(u)[i])}] = m->weights_of(u)[i];
  test::expect_valid_graph(dir);
  return arcs;
}

using Arcs = std::map<std::pair<uint64_t, uint64_t>, uint32_t>;

TEST(GraphImportWeighted, TextKeepsTheThirdColumnAndADuplicatesSmallestWeight) {
  TestDir d;
  auto in = write(d, "g.txt", "# u v weight\n1 2 5\n2 1 3\n2 3 7 extra columns\n3 3 1\n4 2 0\n");
  auto m = import(in, d.path() / "g", true);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_TRUE(m->weighted);
  EXPECT_EQ(m->duplicates, 1u);
  EXPECT_EQ(m->self_loops, 1u);
  EXPECT_EQ(weighted_arcs(d.path() / "g"),
            (Arcs{{{1, 2}, 3}, {{2, 1}, 3}, {{2, 3}, 7}, {{3, 2}, 7}, {{2, 4}, 0}, {{4, 2}, 0}}));
  // Without --weighted the same file is unweighted, its weights ignored.
  auto plain = import(in, d.path() / "plain", false);
  ASSERT_TRUE(plain) << plain.status().message();
  EXPECT_FALSE(plain->weighted);
  EXPECT_FALSE(std::filesystem::exists(d.path() / "plain" / kWeightsFile));
  EXPECT_EQ(plain->format_version, kFormatVersion);
}

TEST(GraphImportWeighted, DirectedArcsKeepTheirOwnWeights) {
  TestDir d;
  auto m = import(write(d, "g.txt", "1 2 5\n2 1 3\n1 2 9\n"), d.path() / "g", true, /*directed=*/true);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(weighted_arcs(d.path() / "g"), (Arcs{{{1, 2}, 5}, {{2, 1}, 3}}));
}

TEST(GraphImportWeighted, GapAndDimacsFilesAreToldByNameAndContent) {
  TestDir d;
  const std::string dimacs =
      "c a tiny road network\nc 5 vertices, 5 arcs; vertex 5 has none\np sp 5 5\n"
      "a 1 2 7\na 2 1 7\na 2 3 1\nc a comment between arcs\na 3 4 2\na 4 1 10\n";
  for (const char* name : {"roads.gr", "roads.txt"}) {  // by its name, then by its first line
    auto out = d.path() / (std::string(name) + ".g");
    auto m = import(write(d, name, dimacs), out, /*weighted=*/false, /*directed=*/true);
    ASSERT_TRUE(m) << name << ": " << m.status().message();
    EXPECT_TRUE(m->weighted) << name;
    EXPECT_EQ(m->vertices, 5u) << "the problem line declares vertex 5";
    EXPECT_EQ(weighted_arcs(out), (Arcs{{{1, 2}, 7}, {{2, 1}, 7}, {{2, 3}, 1}, {{3, 4}, 2}, {{4, 1}, 10}})) << name;
  }
  auto wel = import(write(d, "g.wel", "0 1 4\n1 2 6\n"), d.path() / "wel", /*weighted=*/false);
  ASSERT_TRUE(wel) << wel.status().message();
  EXPECT_EQ(weighted_arcs(d.path() / "wel"), (Arcs{{{0, 1}, 4}, {{1, 0}, 4}, {{1, 2}, 6}, {{2, 1}, 6}}));
  // A format given by name is taken as given: text, unweighted.
  auto as_text = import(d.path() / "g.wel", d.path() / "as-text", false, false, InputFormat::kText);
  ASSERT_TRUE(as_text) << as_text.status().message();
  EXPECT_FALSE(as_text->weighted);
  auto mtx = import(write(d, "g.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 2 9\n"),
                    d.path() / "mtx", true);
  ASSERT_TRUE(mtx) << mtx.status().message();
  EXPECT_EQ(weighted_arcs(d.path() / "mtx"), (Arcs{{{1, 2}, 4}, {{2, 1}, 4}, {{2, 3}, 9}, {{3, 2}, 9}}));
}

// Files saved by Windows editors: a UTF-8 byte order mark before the
// first line, CRLF line ends. Told apart and parsed as without them; a
// Matrix Market file taken for text would lose its declared vertices and
// read its size line as an edge.
TEST(GraphImportWeighted, AByteOrderMarkAndCrlfLinesDoNotHideTheFormat) {
  TestDir d;
  const std::string bom = "\xEF\xBB\xBF";
  auto mtx = import(write(d, "m.txt", bom + "%%MatrixMarket matrix coordinate integer general\n5 5 2\n1 2 4\n2 3 9\n"),
                    d.path() / "mtx", true);
  ASSERT_TRUE(mtx) << mtx.status().message();
  EXPECT_EQ(mtx->vertices, 5u) << "the size line declares 5 vertices";
  EXPECT_EQ(weighted_arcs(d.path() / "mtx"), (Arcs{{{1, 2}, 4}, {{2, 1}, 4}, {{2, 3}, 9}, {{3, 2}, 9}}));
  for (const std::string& text : {bom + "c roads\np sp 4 1\na 1 2 7\n", std::string("c\r\np sp 4 1\r\na 1 2 7\r\n"),
                                  std::string("p\tsp 4 1\na 1 2 7\n")}) {
    const auto out = d.path() / ("gr" + std::to_string(text.size()));
    auto gr = import(write(d, "r.dat", text), out, false, true);
    ASSERT_TRUE(gr) << gr.status().message();
    EXPECT_EQ(gr->vertices, 4u) << "the problem line declares 4 vertices";
    EXPECT_EQ(weighted_arcs(out), (Arcs{{{1, 2}, 7}}));
  }
}

TEST(GraphImportWeighted, BadWeightsNameTheFileAndLine) {
  TestDir d;
  EXPECT_CONTAINS(import_error(write(d, "a.txt", "1 2 3\n1 3\n"), d), "a.txt:2: expected edge weight, found end");
  EXPECT_CONTAINS(import_error(write(d, "b.txt", "1 2 -1\n"), d), "b.txt:1: edge weight '-1' is not a non-negative");
  EXPECT_CONTAINS(import_error(write(d, "c.txt", "1 2 1.5\n"), d), "c.txt:1: edge weight '1.5' is not a non-negative");
  EXPECT_CONTAINS(import_error(write(d, "e.txt", "1 2 4294967296\n"), d),
                  "e.txt:1: edge weight '4294967296' does not fit in 32 bits (largest 4294967295)");
  EXPECT_CONTAINS(import_error(write(d, "e2.txt", "1 2 99999999999999999999\n"), d),
                  "e2.txt:1: edge weight '99999999999999999999' does not fit in 32 bits");
  EXPECT_CONTAINS(import_error(write(d, "f.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"), d),
                  "f.mtx:1: Matrix Market field 'pattern': weights (import --weighted) are the values of an "
                  "'integer' matrix");
  EXPECT_CONTAINS(import_error(write(d, "g.bin", std::string(16, '\1')), d, true, InputFormat::kBin64),
                  "g.bin: a binary edge list (bin64) holds no weights");
  EXPECT_CONTAINS(import_error(write(d, "h.gr", "c x\na 1 2 3\n"), d),
                  "h.gr:2: expected the problem line 'p sp N M' before any arc");
  EXPECT_CONTAINS(import_error(write(d, "i.gr", "p sp 3 1\na 1 4 3\n"), d), "i.gr:2: vertex 4 out of range 1..3");
  EXPECT_CONTAINS(import_error(write(d, "j.gr", "p sp 3 2\na 1 2 3\n"), d),
                  "j.gr:2: end of file after 1 arcs; the problem line declares 2");
  EXPECT_CONTAINS(import_error(write(d, "k.gr", "p sp 3 1\ne 1 2\n"), d),
                  "k.gr:2: unknown line type 'e' (DIMACS lines start with c, p or a)");
  EXPECT_CONTAINS(import_error(write(d, "l.gr", "p sp 3 1\na 1 2\n"), d), "l.gr:2: expected edge weight");
  EXPECT_CONTAINS(import_error(write(d, "m.gr", "p max 3 1\n"), d), "m.gr:1: problem line must be 'p sp N M'");
  // Refused at the problem line, before anything is written for them.
  EXPECT_CONTAINS(import_error(write(d, "n.gr", "c big\np sp 4294967297 1\na 1 2 3\n"), d),
                  "n.gr:2: the problem line declares 4294967297 vertices; at most 2^32 are supported");
  // The mirrored entries of a skew-symmetric matrix are its values negated.
  EXPECT_CONTAINS(
      import_error(write(d, "o.mtx", "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 5\n"), d),
      "o.mtx:1: Matrix Market symmetry 'skew-symmetric': the mirrored entries are the values negated");
  EXPECT_FALSE(std::filesystem::exists(d.path() / "bad" / kMetaFile));
}

// An edge list larger than half the budget: a regular file is parsed
// again, a stream goes to scratch files (pairs and weights); either way
// the weights are those of the graph imported in memory.
TEST(GraphImportWeighted, WeightsSurviveAReparseAndAStreamsScratchFiles) {
  TestDir d;
  std::mt19937_64 rng(42);
  std::ostringstream text;
  for (int i = 0; i < 30000; ++i) text << rng() % 2000 << ' ' << rng() % 2000 << ' ' << rng() % 1000 << '\n';
  auto file = write(d, "big.txt", text.str());
  auto whole = import(file, d.path() / "whole", true);
  ASSERT_TRUE(whole) << whole.status().message();
  auto reparsed = import(file, d.path() / "reparsed", true, false, InputFormat::kAuto, kMinMemoryBytes);
  ASSERT_TRUE(reparsed) << reparsed.status().message();
  FifoInput fifo(d, "fifo", text.str());
  auto streamed = import(fifo.path(), d.path() / "streamed", true, false, InputFormat::kAuto, kMinMemoryBytes);
  fifo.wait();
  ASSERT_TRUE(streamed) << streamed.status().message();
  const Arcs want = weighted_arcs(d.path() / "whole");
  EXPECT_GT(want.size(), 50000u);
  EXPECT_EQ(weighted_arcs(d.path() / "reparsed"), want);
  EXPECT_EQ(weighted_arcs(d.path() / "streamed"), want);
  for (const char* f : {kAdjacencyFile, kWeightsFile})
    EXPECT_EQ(test::read_file(d.path() / "streamed" / f), test::read_file(d.path() / "whole" / f)) << f;
}

TEST(GraphImportWeighted, SparseIdsBeyondTheIdMapBudgetAreRefusedSayingWhatToRaise) {
  TestDir d;
  auto m = import(write(d, "g.txt", "10 20 1\n30 40 2\n50 60 3\n"), d.path() / "g", true, false, InputFormat::kAuto,
                  1ULL << 30, /*max_slice_ids=*/2);
  ASSERT_FALSE(m);
  EXPECT_CONTAINS(m.status().message(),
                  "g.txt: a weighted edge list whose 6 vertex ids are not contiguous needs the "
                  "whole id map in memory");
}

// Thousands of copies of one arc, the lightest among them: a batch that
// spreadsort finishes by its buckets alone (no comparison) keeps it too.
TEST(GraphImportWeighted, ManyCopiesOfAnArcKeepTheLightest) {
  TestDir d;
  std::ostringstream text;
  for (int i = 0; i < 5000; ++i) text << "1 2 " << (i == 3777 ? 2 : 100 + i % 50) << "\n2 3 " << 7 + i % 5 << "\n";
  for (bool directed : {true, false}) {
    auto out = d.path() / (directed ? "directed" : "undirected");
    auto m = import(write(d, "copies.txt", text.str()), out, true, directed);
    ASSERT_TRUE(m) << m.status().message();
    const Arcs want =
        directed ? Arcs{{{1, 2}, 2}, {{2, 3}, 7}} : Arcs{{{1, 2}, 2}, {{2, 1}, 2}, {{2, 3}, 7}, {{3, 2}, 7}};
    EXPECT_EQ(weighted_arcs(out), want) << (directed ? "directed" : "undirected");
  }
  WeightedEdgeRuns runs(d.path() / "runs", /*sync_runs=*/false);
  std::vector<WeightedKey> batch;
  for (uint32_t i = 0; i < 40000; ++i) batch.push_back({pack_edge(i % 7, 1), 1000 - i % 997});
  batch.push_back({pack_edge(3, 1), 0});
  ASSERT_TRUE(runs.write_run(batch));
  std::vector<WeightedKey> got;
  ASSERT_TRUE(runs.merge([&](std::span<const WeightedKey> recs) {
    got.insert(got.end(), recs.begin(), recs.end());
    return Status::ok();
  }));
  ASSERT_EQ(got.size(), 7u);
  for (const WeightedKey& r : got) EXPECT_EQ(r.weight, edge_source(r.key) == 3 ? 0u : 4u) << edge_source(r.key);
}

TEST(GraphImportWeighted, SortedRunsKeepEachKeysSmallestWeight) {
  TestDir d;
  WeightedEdgeRuns runs(d.path() / "runs", /*sync_runs=*/false);
  std::vector<WeightedKey> batch{{5, 9}, {1, 4}, {5, 2}, {3, 3}};
  ASSERT_TRUE(runs.write_run(batch));
  batch = {{5, 7}, {3, 1}, {8, 6}};
  ASSERT_TRUE(runs.write_run(batch));
  std::vector<WeightedKey> tail{{8, 2}, {1, 4}, {9, 0}};
  std::vector<std::pair<uint64_t, uint32_t>> got;
  Status st = runs.merge(
      [&](std::span<const WeightedKey> recs) {
        for (const WeightedKey& r : recs) got.push_back({r.key, r.weight});
        return Status::ok();
      },
      {}, &tail);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint32_t>>{{1, 4}, {3, 1}, {5, 2}, {8, 2}, {9, 0}}));
}

}  // namespace
}  // namespace peregrine::graph
