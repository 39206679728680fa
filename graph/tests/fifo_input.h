// FifoInput: an edge list given to import through a FIFO, as a pipe gives
// it (zcat big.txt.gz | peregrine-graph import --input -). Test threads
// only; its writer thread is joined by wait() or the destructor.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "graph_test_dir.h"

namespace peregrine::graph::test {

// A pipe (zcat big.txt.gz | peregrine-graph import --input -): the input
// comes from a FIFO, written by another thread, so it has no size and
// cannot be read twice; the format is told from its first bytes.
class FifoInput {
 public:
  FifoInput(const TestDir& d, const std::string& name, std::string bytes) : path_(d.path() / name) {
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0) << std::strerror(errno);
    writer_ = std::thread([p = path_, bytes = std::move(bytes)] {
      std::ofstream(p, std::ios::binary) << bytes;  // blocks until import opens it
    });
  }
  // Every use opens the FIFO (import does before anything can fail), so
  // the writer always gets to finish.
  ~FifoInput() {
    if (writer_.joinable()) writer_.join();
  }
  const std::filesystem::path& path() const { return path_; }
  void wait() { writer_.join(); }

 private:
  std::filesystem::path path_;
  std::thread writer_;
};

}  // namespace peregrine::graph::test
