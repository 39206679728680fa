// import -> algorithm -> --out, compared with the per-vertex results
// networkx computed for the graphs of graph/tests/data (make-expected.py:
// computed once, stored as files; networkx is not needed here). The whole
// path a user takes: their ids in, their ids out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cli_run.h"
#include "edge_list_file.h"
#include "graph_test_dir.h"

namespace peregrine::graph {
namespace {

using test::CliRun;
using test::run_cli;
using test::TestDir;

const std::filesystem::path kData = PEREGRINE_GRAPH_DATA;

// "vertex value..." lines as vertex -> the rest of the line's fields.
std::map<uint64_t, std::vector<std::string>> read_table(const std::filesystem::path& path) {
  std::map<uint64_t, std::vector<std::string>> t;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    uint64_t v;
    l >> v;
    std::string f;
    while (l >> f) t[v].push_back(f);
  }
  return t;
}

// The value of a "name   value" line of a text report.
std::string field(const std::string& report, const std::string& name) {
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key, value;
    if (l >> key >> value && key == name) return value;
  }
  return "(no " + name + ")";
}

// The edges of a data file as the algorithms see them.
std::set<std::pair<uint64_t, uint64_t>> arcs(const std::filesystem::path& path, bool directed) {
  std::set<std::pair<uint64_t, uint64_t>> s;
  for (auto [u, v] : test::text_pairs(path)) {
    s.insert({u, v});
    if (!directed) s.insert({v, u});
  }
  return s;
}

struct Case {
  const char* name;
  const char* input;  // file in data/
  bool directed;
  uint64_t root;  // make-expected.py's ROOTS
};

// Each case runs reading the lists from the graph on every pass
// (--memory 0) and with the lists kept in memory on two threads.
class NetworkxResults : public ::testing::TestWithParam<std::tuple<Case, bool>> {
 protected:
  static const Case& param() { return std::get<0>(GetParam()); }
  static std::string memory_options() { return std::get<1>(GetParam()) ? "--memory 1G --threads 2" : "--memory 0"; }
  void SetUp() override {
    const Case& c = param();
    graph_ = (dir_.path() / "g").string();
    CliRun r = run_cli(std::string("import -q --input ") + (kData / c.input).string() + " --out " + graph_ +
                       (c.directed ? " --directed" : ""));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  // Runs ALG with --out and --validate; returns the --out table.
  std::map<uint64_t, std::vector<std::string>> run_alg(const std::string& alg, const std::string& extra = "") {
    auto out = dir_.path() / (alg + ".out");
    CliRun r = run_cli(alg + " --graph " + graph_ + " --validate --out " + out.string() + " " + extra + " " +
                       memory_options());
    EXPECT_EQ(r.code, 0) << alg << ": " << r.output;
    EXPECT_EQ(field(r.output, "validated"), "yes") << r.output;
    const bool one_pass = alg == "cc" || alg == "tc";  // never kept
    EXPECT_EQ(field(r.output, "lists_in_memory"), std::get<1>(GetParam()) && !one_pass ? "yes" : "no") << r.output;
    output_ = r.output;
    return read_table(out);
  }
  std::map<uint64_t, std::vector<std::string>> expected(const std::string& ext) {
    return read_table(kData / (std::string(param().name) + "." + ext));
  }

  TestDir dir_;
  std::string graph_;
  std::string output_;
};

TEST_P(NetworkxResults, BfsDepthsAndParents) {
  const Case& c = param();
  auto got = run_alg("bfs", "--root " + std::to_string(c.root));
  auto want = expected("bfs");
  ASSERT_EQ(got.size(), want.size());
  const auto edges = arcs(kData / (std::string(c.name) + ".txt"), c.directed);
  for (const auto& [v, fields] : want) {
    ASSERT_EQ(got[v].size(), 2u) << "vertex " << v;
    EXPECT_EQ(got[v][0], fields[0]) << "depth of vertex " << v;
    // Parents may differ between runs; each must be a reached vertex one
    // level up joined to v by an arc parent -> v (the root: itself).
    const int64_t depth = std::stoll(got[v][0]);
    if (depth < 0) {
      EXPECT_EQ(got[v][1], "-1") << v;
    } else if (depth == 0) {
      EXPECT_EQ(v, c.root);
      EXPECT_EQ(got[v][1], std::to_string(c.root));
    } else {
      const uint64_t p = std::stoull(got[v][1]);
      EXPECT_EQ(std::stoll(got[p][0]), depth - 1) << "parent " << p << " of " << v;
      EXPECT_TRUE(edges.count({p, v})) << "no arc " << p << " -> " << v;
    }
  }
}

TEST_P(NetworkxResults, ShortestPathDistances) {
  const Case& c = param();
  EXPECT_EQ(run_alg("sssp", "--root " + std::to_string(c.root)), expected("sssp"));
  EXPECT_EQ(field(output_, "root"), std::to_string(c.root)) << output_;
  // Wider buckets settle the same distances.
  EXPECT_EQ(run_alg("sssp", "--delta 3 --root " + std::to_string(c.root)), expected("sssp"));
}

TEST_P(NetworkxResults, ComponentLabels) {
  auto got = run_alg("cc");
  EXPECT_EQ(got, expected("cc"));
  EXPECT_EQ(field(output_, "weakly_connected"), param().directed ? "yes" : "no") << output_;
}

TEST_P(NetworkxResults, CoreNumbers) {
  if (param().directed) {
    CliRun r = run_cli("kcore --graph " + graph_);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("k-core is defined on undirected graphs"), std::string::npos) << r.output;
    return;
  }
  EXPECT_EQ(run_alg("kcore"), expected("kcore"));
}

TEST_P(NetworkxResults, BetweennessFromTheRoot) {
  const Case& c = param();
  auto got = run_alg("bc", "--root " + std::to_string(c.root));
  auto want = expected("bc");
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [v, fields] : want) {
    ASSERT_EQ(got[v].size(), 1u) << "vertex " << v;
    const double w = std::stod(fields[0]);
    EXPECT_NEAR(std::stod(got[v][0]), w, 1e-12 * std::max(1.0, w)) << "betweenness of vertex " << v;
  }
  EXPECT_EQ(field(output_, "root"), std::to_string(c.root)) << output_;
  EXPECT_EQ(field(output_, "sources"), "1") << output_;
}

TEST_P(NetworkxResults, TrianglesAtEveryVertex) {
  if (param().directed) {
    CliRun r = run_cli("tc --graph " + graph_);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("triangle counting is defined on undirected graphs"), std::string::npos) << r.output;
    return;
  }
  auto want = expected("tc");
  EXPECT_EQ(run_alg("tc"), want);
  uint64_t corners = 0;
  for (const auto& [v, fields] : want) corners += std::stoull(fields[0]);
  EXPECT_EQ(field(output_, "triangles"), std::to_string(corners / 3)) << output_;
  // Without --out or --validate only the total is counted.
  CliRun r = run_cli("tc --graph " + graph_ + " --json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"triangles\": " + std::to_string(corners / 3)), std::string::npos) << r.output;
}

TEST_P(NetworkxResults, PagerankToConvergence) {
  auto got = run_alg("pagerank", "--iterations 10000 --epsilon 1e-15");
  auto want = expected("pagerank");
  ASSERT_EQ(got.size(), want.size());
  double sum = 0;
  for (const auto& [v, fields] : want) {
    ASSERT_EQ(got[v].size(), 1u) << "vertex " << v;
    const double g = std::stod(got[v][0]);
    EXPECT_NEAR(g, std::stod(fields[0]), 1e-12) << "rank of vertex " << v;
    sum += g;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, NetworkxResults,
    ::testing::Combine(::testing::Values(Case{"path", "path.txt", false, 300}, Case{"star", "star.txt", false, 3},
                                         Case{"karate", "karate.txt", false, 1}, Case{"karate", "karate.mtx", false, 1},
                                         Case{"dcycle", "dcycle.txt", true, 1}),
                       ::testing::Bool()),
    [](const auto& info) {
      std::string s = std::get<0>(info.param).input;
      for (char& ch : s)
        if (ch == '.') ch = '_';
      return s + (std::get<1>(info.param) ? "_kept" : "_read");
    });

// Weighted graphs: the karate club's weight column (import --weighted) and
// a DIMACS road graph (told by its name; directed), sssp's distances equal
// networkx's Dijkstra, vertex by vertex, whatever the bucket width.
TEST(NetworkxWeightedResults, ShortestPathDistancesOverTheWeights) {
  TestDir dir;
  struct Weighted {
    const char* input;
    const char* import_options;
    const char* expected;
  };
  for (const Weighted& w :
       {Weighted{"karate.txt", "--weighted", "karate.wsssp"}, Weighted{"roads.gr", "--directed", "roads.wsssp"}}) {
    const std::string g = (dir.path() / w.input).string();
    CliRun r = run_cli(std::string("import -q --input ") + (kData / w.input).string() + " --out " + g + " " +
                       w.import_options);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(field(r.output, "weighted"), "yes") << r.output;
    for (const char* delta : {"1", "4", "1000"}) {
      for (const char* memory : {"0", "1G"}) {
        const auto out = dir.path() / (std::string(w.input) + ".sssp");
        r = run_cli("sssp --graph " + g + " --root 1 --validate --delta " + delta + " --memory " + memory + " --out " +
                    out.string());
        ASSERT_EQ(r.code, 0) << r.output;
        EXPECT_EQ(field(r.output, "validated"), "yes") << r.output;
        EXPECT_EQ(field(r.output, "lists_in_memory"), std::string(memory) == "0" ? "no" : "yes") << r.output;
        EXPECT_EQ(read_table(out), read_table(kData / w.expected))
            << w.input << ", delta " << delta << ", memory " << memory;
      }
    }
  }
}

// --out is exactly one "vertex value" line per vertex, %.17g for ranks.
TEST(GraphOut, TextLayout) {
  TestDir d;
  auto g = (d.path() / "g").string();
  ASSERT_EQ(run_cli("import -q --input " + (kData / "path.txt").string() + " --out " + g).code, 0);
  auto out = d.path() / "cc.out";
  ASSERT_EQ(run_cli("cc --graph " + g + " --out " + out.string()).code, 0);
  auto bytes = test::read_file(out);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()),
            "100 100\n200 100\n300 100\n400 100\n500 100\n600 100\n700 100\n800 100\n900 100\n");
  out = d.path() / "pr.out";
  ASSERT_EQ(run_cli("pagerank --graph " + g + " --iterations 1 --out " + out.string()).code, 0);
  bytes = test::read_file(out);
  // One iteration from 1/9: the end vertex 100 has 1 neighbour of degree 2.
  char want[64];
  std::snprintf(want, sizeof want, "100 %.17g\n", 0.15 / 9 + 0.85 * (1.0 / 9 / 2));
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + static_cast<long>(std::strlen(want))), want);
  // The report speaks input ids too, map loaded or not: the default root is
  // the lowest id of highest degree (200: the path's ends have degree 1).
  CliRun r = run_cli("bfs --graph " + g);
  EXPECT_EQ(field(r.output, "root"), "200") << r.output;
  r = run_cli("bfs --graph " + g + " --root 700");
  EXPECT_EQ(field(r.output, "root"), "700") << r.output;
  EXPECT_EQ(field(r.output, "reached"), "9") << r.output;
  // levels = greatest depth + 1: 100 is 6 hops from 700.
  EXPECT_EQ(field(r.output, "levels"), "7") << r.output;
  r = run_cli("bfs --graph " + g + " --root 150");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("root 150 is not a vertex of graph"), std::string::npos) << r.output;
}

// --out-format bin: the same fields as little-endian 8-byte values.
TEST(GraphOut, BinaryLayout) {
  TestDir d;
  auto g = (d.path() / "g").string();
  ASSERT_EQ(run_cli("import -q --input " + (kData / "dcycle.txt").string() + " --directed --out " + g).code, 0);
  auto read_words = [](const std::filesystem::path& p) {
    auto bytes = test::read_file(p);
    EXPECT_EQ(bytes.size() % 8, 0u);
    std::vector<uint64_t> w(bytes.size() / 8);
    std::memcpy(w.data(), bytes.data(), bytes.size());
    return w;
  };
  auto out = d.path() / "bfs.bin";
  ASSERT_EQ(run_cli("bfs --graph " + g + " --root 1 --out-format bin --out " + out.string()).code, 0);
  auto bfs = read_words(out);
  auto want = read_table(kData / "dcycle.bfs");
  ASSERT_EQ(bfs.size(), 3 * want.size());
  size_t i = 0;
  for (const auto& [v, fields] : want) {
    EXPECT_EQ(bfs[3 * i], v);
    EXPECT_EQ(static_cast<int64_t>(bfs[3 * i + 1]), std::stoll(fields[0])) << "depth of " << v;
    if (v == 6) {
      EXPECT_EQ(static_cast<int64_t>(bfs[3 * i + 2]), -1);  // 6 is not reachable from 1
    }
    ++i;
  }
  out = d.path() / "pr.bin";
  ASSERT_EQ(
      run_cli("pagerank --graph " + g + " --iterations 10000 --epsilon 1e-15 --out-format bin --out " + out.string())
          .code,
      0);
  auto pr = read_words(out);
  want = read_table(kData / "dcycle.pagerank");
  ASSERT_EQ(pr.size(), 2 * want.size());
  i = 0;
  for (const auto& [v, fields] : want) {
    EXPECT_EQ(pr[2 * i], v);
    double rank;
    std::memcpy(&rank, &pr[2 * i + 1], 8);
    EXPECT_NEAR(rank, std::stod(fields[0]), 1e-12) << "rank of " << v;
    ++i;
  }
}

}  // namespace
}  // namespace peregrine::graph
