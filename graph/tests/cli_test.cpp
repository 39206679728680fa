// The peregrine-graph executable end to end: gen, every algorithm with
// --validate and --json, and the exit codes and messages of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <set>

#include "cli_run.h"
#include "edge_list_file.h"
#include "graph_test_dir.h"
#include "peregrine/graph/csr_writer.h"
#include "peregrine/graph/edge_runs.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

using test::CliRun;

CliRun run(const std::string& args) { return test::run_cli(args); }

TEST(GraphCli, GenThenEveryAlgorithmValidates) {
  TestDir d;
  std::string g = (d.path() / "g").string();
  CliRun r = run("gen --scale 11 --seed 9 --quiet --out " + g);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("vertices         2048"), std::string::npos) << r.output;
  for (const char* alg : {"bfs", "sssp", "bc", "kcore", "cc", "pagerank", "tc"}) {
    r = run(std::string(alg) + " --graph " + g + " --validate --json");
    ASSERT_EQ(r.code, 0) << alg << ": " << r.output;
    EXPECT_NE(r.output.find("\"algorithm\": \"" + std::string(alg) + "\""), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\"validated\": true"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\"iops\": "), std::string::npos) << r.output;
  }
  r = run("bfs --graph " + g + " --json --roots 4 --validate");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"teps\": "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"roots\": 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"validated\": true"), std::string::npos) << r.output;
  r = run("check --graph " + g);
  EXPECT_EQ(r.code, 0) << r.output;
}

// gen --weighted: sssp follows the weights (validated against Dijkstra),
// check covers them, and export writes GAP's .wel (u v weight).
TEST(GraphCli, WeightedGenSsspCheckAndExport) {
  TestDir d;
  std::string g = (d.path() / "w").string();
  CliRun r = run("gen --scale 10 --weighted --quiet --out " + g);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("weighted         yes"), std::string::npos) << r.output;
  for (const char* delta : {"1", "32"}) {
    r = run("sssp --graph " + g + " --validate --json --delta " + delta);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("\"weighted\": true"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\"validated\": true"), std::string::npos) << r.output;
  }
  r = run("check --graph " + g);
  EXPECT_EQ(r.code, 0) << r.output;
  const auto wel = d.path() / "w.wel";
  r = run("export --graph " + g + " --out " + wel.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(wel);
  uint64_t u, v, w, lines = 0;
  while (in >> u >> v >> w) {
    EXPECT_LT(u, v);  // an undirected edge once
    EXPECT_GE(w, 1u);
    EXPECT_LE(w, 255u);
    ++lines;
  }
  EXPECT_GT(lines, 1000u);
  // A weight byte changed: check names the file.
  {
    std::fstream f(g + "/weights.u32", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.put('\x7f');
  }
  r = run("check --graph " + g);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("weights.u32: checksum"), std::string::npos) << r.output;
}

// --input - reads standard input (zcat graph.txt.gz | peregrine-graph
// import --input -): the same graph as from the file, and errors name
// stdin and the line.
TEST(GraphCli, ImportFromStandardInput) {
  TestDir d;
  const std::string karate = std::string(PEREGRINE_GRAPH_DATA) + "/karate.txt";
  auto file = run("import --input " + karate + " --out " + (d.path() / "f").string() + " -q");
  ASSERT_EQ(file.code, 0) << file.output;
  auto piped = run("import --input - --out " + (d.path() / "p").string() + " -q --json < " + karate);
  ASSERT_EQ(piped.code, 0) << piped.output;
  EXPECT_NE(piped.output.find("\"input_bytes\": " + std::to_string(std::filesystem::file_size(karate))),
            std::string::npos)
      << piped.output;
  for (const char* f : {"index.u64", "adjacency.u32", "ids.u64", "graph.meta"}) {
    std::ifstream a(d.path() / "f" / f, std::ios::binary), b(d.path() / "p" / f, std::ios::binary);
    std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
    EXPECT_FALSE(sa.empty()) << f;
    EXPECT_EQ(sa, sb) << f << " differs between --input FILE and --input -";
  }
  auto bad = run("import --input - --out " + (d.path() / "b").string() + " -q < /dev/null");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("stdin: no edges"), std::string::npos) << bad.output;
  std::ofstream(d.path() / "bad.txt") << "1 2\n2 x\n";
  auto line = run("import --input - --out " + (d.path() / "c").string() + " -q < " + (d.path() / "bad.txt").string());
  EXPECT_EQ(line.code, 1) << line.output;
  EXPECT_NE(line.output.find("stdin:2: target vertex id 'x'"), std::string::npos) << line.output;
}

// export writes the edges back in the input's ids: each undirected edge
// once, every arc of a directed graph; importing that list gives the same
// graph again.
TEST(GraphCli, ExportGivesTheInputsEdgesBack) {
  TestDir d;
  for (const auto& [name, arcs] : {std::pair{"karate", false}, std::pair{"dcycle", true}}) {
    const bool directed = arcs;  // a lambda cannot capture a structured binding (clang 14)
    const std::filesystem::path input = std::string(PEREGRINE_GRAPH_DATA) + "/" + name + ".txt";
    const std::string g = (d.path() / name).string(), el = g + ".el", again = g + "-again";
    CliRun r = run("import -q --input " + input.string() + " --out " + g + (directed ? " --directed" : ""));
    ASSERT_EQ(r.code, 0) << r.output;
    r = run("export --graph " + g + " --out " + el);
    ASSERT_EQ(r.code, 0) << r.output;
    // An undirected edge as (smaller id, larger id).
    auto key = [directed](uint64_t u, uint64_t v) {
      return directed || u < v ? std::pair<uint64_t, uint64_t>{u, v} : std::pair<uint64_t, uint64_t>{v, u};
    };
    std::set<std::pair<uint64_t, uint64_t>> want, got;
    for (auto [u, v] : test::text_pairs(input)) want.insert(key(u, v));
    auto lines = test::text_pairs(el);
    for (auto [u, v] : lines) got.insert(key(u, v));
    EXPECT_EQ(got, want) << name;
    EXPECT_EQ(lines.size(), want.size()) << name << ": every edge exactly once";
    EXPECT_NE(r.output.find("edges         " + std::to_string(want.size())), std::string::npos) << r.output;
    r = run("import -q --input " + el + " --out " + again + (directed ? " --directed" : ""));
    ASSERT_EQ(r.code, 0) << r.output;
    for (const char* f : {"index.u64", "adjacency.u32", "ids.u64"}) {
      std::ifstream a(std::filesystem::path(g) / f, std::ios::binary);
      std::ifstream b(std::filesystem::path(again) / f, std::ios::binary);
      std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
      EXPECT_EQ(sa, sb) << name << ": " << f << " differs after export and import";
    }
  }
  CliRun missing = run("export --graph " + (d.path() / "nope").string() + " --out " + (d.path() / "x.el").string());
  EXPECT_EQ(missing.code, 1) << missing.output;
  EXPECT_NE(missing.output.find("not a graph directory"), std::string::npos) << missing.output;
}

TEST(GraphCli, BadInputExitsWithClearErrors) {
  TestDir d;
  std::string g = (d.path() / "g").string();
  ASSERT_EQ(run("gen --scale 10 --quiet --out " + g).code, 0);

  CliRun r = run("bfs --graph " + g + " --root 1024");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("root 1024 out of range"), std::string::npos) << r.output;

  r = run("cc --graph " + (d.path() / "missing").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("missing: not a graph directory"), std::string::npos) << r.output;

  r = run("kcore");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--graph"), std::string::npos) << r.output;

  r = run("gen --scale 10 --memory lots --out " + g);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--memory: bad size 'lots'"), std::string::npos) << r.output;

  r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;

  r = run("pagerank --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("--iterations"), std::string::npos) << r.output;
}

// Help names each option's value (--graph DIR, not --graph arg) and shows
// defaults as written (0.85, not 0.84999999999999998).
TEST(GraphCli, HelpNamesValuesAndShowsDefaultsAsWritten) {
  for (const char* cmd : {"gen", "import", "bfs", "kcore", "cc", "pagerank", "check"}) {
    CliRun r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.output;
    EXPECT_EQ(r.output.find(" arg"), std::string::npos) << cmd << ": " << r.output;
  }
  CliRun r = run("pagerank --help");
  EXPECT_NE(r.output.find("--graph DIR"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(=0.85)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(=1e-8)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("99999"), std::string::npos) << r.output;
}

// A graph whose meta says undirected but whose lists are one-way: the
// algorithms' references would be meaningless, so --validate checks the data
// first and says what is wrong (exit 3).
TEST(GraphCli, ValidateRefusesAnAsymmetricUndirectedGraph) {
  TestDir d;
  auto dir = d.path() / "asym";
  std::filesystem::create_directories(dir);
  GraphMeta meta;
  meta.scale = 2;
  meta.vertices = 4;
  auto w = CsrWriter::create(dir, meta.vertices);
  ASSERT_TRUE(w);
  const std::vector<uint64_t> keys = {pack_edge(0, 1), pack_edge(1, 2)};  // no reverse arcs
  ASSERT_TRUE(w->add(keys));
  ASSERT_TRUE(w->finish(&meta));
  ASSERT_TRUE(write_meta(dir, meta));
  for (const char* alg : {"bfs --root 0", "cc", "pagerank"}) {
    CliRun r = run(std::string(alg) + " --graph " + dir.string() + " --validate");
    EXPECT_EQ(r.code, 3) << alg << ": " << r.output;
    EXPECT_NE(r.output.find("validation failed: graph data:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("has no reverse edge (an undirected graph must be symmetric)"), std::string::npos)
        << r.output;
  }
  CliRun r = run("check --graph " + dir.string());
  EXPECT_EQ(r.code, 1) << r.output;
}

// docs/graph.md: 2 for every bad option value, however it is bad
// (malformed or out of range), checked before any work starts.
TEST(GraphCli, EveryBadOptionValueIsAUsageError) {
  TestDir d;
  std::string g = (d.path() / "g").string();
  ASSERT_EQ(run("gen --scale 10 --quiet --out " + g).code, 0);
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"gen --scale 0 --out " + g + "/x", "--scale must be between 1 and 32, not 0"},
      {"gen --scale 33 --out " + g + "/x", "--scale must be between 1 and 32, not 33"},
      {"gen --scale 10 --edgefactor 0 --out " + g + "/x", "--edgefactor must be at least 1"},
      {"gen --scale 10 --memory 1K --out " + g + "/x", "--memory must be at least 64K"},
      {"gen --scale ten --out " + g + "/x", "scale"},
      {"gen --scale -1 --out " + g + "/x", "--scale must be a non-negative integer, not '-1'"},
      {"gen --scale 10 --edgefactor -1 --out " + g + "/x", "--edgefactor must be a non-negative integer, not '-1'"},
      {"gen --scale 10 --seed -1 --out " + g + "/x", "--seed must be a non-negative integer, not '-1'"},
      {"gen --scale 10 --seed=+7 --out " + g + "/x", "--seed must be a non-negative integer, not '+7'"},
      {"pagerank --graph " + g + " --iterations -1", "--iterations must be a non-negative integer, not '-1'"},
      {"bfs --graph " + g + " --qd -1", "--qd must be a non-negative integer, not '-1'"},
      {"bfs --graph " + g + " --root -1", "--root must be a non-negative integer, not '-1'"},
      {"bfs --graph " + g + " --max-io 5000", "--max-io: max IO size must be a multiple of 4096"},
      {"bfs --graph " + g + " --max-io 128M", "--max-io: max IO size must be a multiple of 4096"},
      {"bfs --graph " + g + " --max-io huge", "--max-io: bad size 'huge'"},
      {"bfs --graph " + g + " --gap 1Q", "--gap: bad size '1Q'"},
      {"bfs --graph " + g + " --qd 0", "--qd must be between 1 and 4096"},
      {"bfs --graph " + g + " --roots 0", "--roots must be between 1 and 1024"},
      {"sssp --graph " + g + " --delta -2", "--delta must be a non-negative integer, not '-2'"},
      {"pagerank --graph " + g + " --iterations 0", "--iterations must be at least 1"},
      {"pagerank --graph " + g + " --damping 1.5", "--damping must be in [0, 1)"},
      {"pagerank --graph " + g + " --damping -0.1", "--damping must be in [0, 1)"},
      {"pagerank --graph " + g + " --epsilon -1", "--epsilon must be 0 or more"},
      {"cc --graph " + g + " --out x --out-format csv", "--out-format: unknown format 'csv'"},
      {"import --input x --out y --format csv", "--format: unknown format 'csv'"},
      {"import --input x --out y --memory 1K", "--memory must be at least 64K"},
      {"gen --scale 10 --threads -1 --out " + g + "/x", "--threads must be between 0 and 256, not '-1'"},
      {"gen --scale 10 --threads 257 --out " + g + "/x", "--threads must be between 0 and 256, not '257'"},
      {"gen --scale 10 --threads 2x --out " + g + "/x", "--threads must be between 0 and 256, not '2x'"},
      {"gen --scale 10 --threads +2 --out " + g + "/x", "--threads must be between 0 and 256, not '+2'"},
      {"import --input x --out y --threads -1", "--threads must be between 0 and 256, not '-1'"},
      {"import --input x --out y --threads 4294967297", "--threads must be between 0 and 256, not '4294967297'"},
      {"import --input x --out y --threads 257", "--threads must be between 0 and 256, not '257'"},
      {"import --input x --out y --threads two", "--threads must be between 0 and 256, not 'two'"},
      {"pagerank --graph " + g + " --threads 257", "--threads must be between 0 and 256, not '257'"},
      {"tc --graph " + g + " --threads -1", "--threads must be between 0 and 256, not '-1'"},
      {"bfs --graph " + g + " --memory lots", "--memory: bad size 'lots' (use e.g. 0, 512M, 2G or auto)"},
      {"pagerank --graph " + g + " --memory -1", "--memory: bad size '-1'"},
  };
  for (const auto& c : cases) {
    CliRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << ": " << r.output;
  }
  // Refused before any work: no gen output directory was created.
  EXPECT_FALSE(std::filesystem::exists(g + "/x"));
}

}  // namespace
}  // namespace peregrine::graph
