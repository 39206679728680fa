// expect_valid_graph: opens, loads and fully checks a graph directory
// (checksums, symmetry of an undirected graph or the transpose of a
// directed one), as the import tests do after every import. Test threads
// only; gtest assertions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph::test {

inline void expect_valid_graph(const std::filesystem::path& dir) {
  auto g = open_graph(dir);
  ASSERT_TRUE(g) << g.status().message();
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m) << m.status().message();
  if (g->directed()) {
    auto t = open_transpose(*g);
    ASSERT_TRUE(t) << t.status().message();
    auto tm = load_memory_graph(*t);
    ASSERT_TRUE(tm);
    EXPECT_TRUE(check_graph(*m, &*tm)) << check_graph(*m, &*tm).message();
  } else {
    EXPECT_TRUE(check_graph(*m)) << check_graph(*m).message();
  }
}

}  // namespace peregrine::graph::test
