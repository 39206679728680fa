// The (u, v) pairs of a small text edge list in graph/tests/data, read
// plainly (comments '#'/'%' and blank lines skipped, extra columns
// ignored) as an independent check on what import makes of it.
//
// Thread rules: a pure function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace peregrine::graph::test {

inline std::vector<std::pair<uint64_t, uint64_t>> text_pairs(const std::filesystem::path& path) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    std::istringstream l(line);
    uint64_t u, v;
    l >> u >> v;
    pairs.emplace_back(u, v);
  }
  return pairs;
}

}  // namespace peregrine::graph::test
