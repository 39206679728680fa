// Runs the peregrine-graph executable under test (PEREGRINE_GRAPH_BIN, set
// by CMake) through the shell, capturing stdout and stderr together and the
// exit code. One test thread per call.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace peregrine::graph::test {

struct CliRun {
  int code;
  std::string output;  // stdout and stderr
};

inline CliRun run_cli(const std::string& args) {
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

}  // namespace peregrine::graph::test
