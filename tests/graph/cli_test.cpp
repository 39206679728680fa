// The peregrine-graph executable end to end: gen, every algorithm with
// --validate and --json, and the exit codes and messages of bad input.
#include <sys/wait.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "graph_test_dir.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

struct CliRun {
  int code;
  std::string output;  // stdout and stderr
};

CliRun run(const std::string& args) {
  std::string cmd = std::string(PEREGRINE_GRAPH_BIN) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(GraphCli, GenThenEveryAlgorithmValidates) {
  TestDir d;
  std::string g = (d.path() / "g").string();
  CliRun r = run("gen --scale 11 --seed 9 --quiet --out " + g);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("vertices         2048"), std::string::npos) << r.output;
  for (const char* alg : {"bfs", "kcore", "cc", "pagerank"}) {
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
  for (const char* cmd : {"gen", "bfs", "kcore", "cc", "pagerank", "check"}) {
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

}  // namespace
}  // namespace peregrine::graph
