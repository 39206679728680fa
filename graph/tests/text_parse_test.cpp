// Text edge lists parsed by several threads: the same edges in the same
// order as one thread, the first bad line reported with its exact number
// wherever it falls among the pieces, and streams too. The inputs are a
// few MiB so that a batch is cut into pieces (4 MiB each) for 2-4 threads.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "graph_test_dir.h"
#include "peregrine/graph/edge_input.h"
#include "peregrine/graph/importer.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

struct Lines {
  std::string text;
  std::vector<InputEdge> edges;   // what the text says, in order
  std::vector<uint64_t> line_of;  // the line number of each edge
};

// ~12 MiB of lines of every kind: edges with blanks, tabs, CRLF, weights;
// comments; blank lines.
Lines make_lines(uint64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Lines l;
  uint64_t line = 0;
  for (uint64_t i = 0; i < count; ++i) {
    ++line;
    switch (rng() % 16) {
      case 0: l.text += "# a comment 1 2\n"; continue;
      case 1: l.text += "\n"; continue;
      case 2: l.text += "   % another\r\n"; continue;
      default: break;
    }
    const uint64_t u = rng() >> (rng() % 64), v = rng() % 1000;
    const char* sep[] = {" ", "\t", "  \t "};
    l.text += std::to_string(u) + sep[rng() % 3] + std::to_string(v);
    if (rng() % 4 == 0) l.text += " 0.25";
    l.text += rng() % 5 == 0 ? "\r\n" : "\n";
    l.edges.push_back({u, v});
    l.line_of.push_back(line);
  }
  return l;
}

std::filesystem::path write(const TestDir& d, const std::string& name, const std::string& text) {
  auto p = d.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

Expected<std::vector<InputEdge>> read_all(const std::filesystem::path& path, unsigned threads) {
  auto in = EdgeInput::open(path, InputFormat::kText, threads);
  if (!in) return in.status();
  std::vector<InputEdge> all, buf(1000);  // a batch size that ends mid-piece
  while (true) {
    auto n = (*in)->read(buf);
    if (!n) return n.status();
    if (*n == 0) break;
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*n));
  }
  if ((*in)->bytes_consumed() != std::filesystem::file_size(path))
    return Status::error(EIO, "consumed " + std::to_string((*in)->bytes_consumed()) + " bytes");
  return all;
}

bool same(const std::vector<InputEdge>& a, const std::vector<InputEdge>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const InputEdge& x, const InputEdge& y) {
           return x.u == y.u && x.v == y.v;
         });
}

TEST(GraphTextParse, ThreadsGiveTheEdgesInFileOrder) {
  TestDir d;
  const Lines l = make_lines(600000, 1);
  ASSERT_GT(l.text.size(), 9u << 20);  // more than two pieces
  const auto path = write(d, "e.txt", l.text);
  for (unsigned threads : {1u, 2u, 3u, 4u}) {
    auto got = read_all(path, threads);
    ASSERT_TRUE(got) << got.status().message();
    EXPECT_TRUE(same(*got, l.edges)) << threads << " threads: " << got->size() << " edges, want " << l.edges.size();
  }
}

// The first bad line is reported with its number, whichever piece (and
// thread) it is in, even when a later piece has an earlier-parsed error.
TEST(GraphTextParse, FirstBadLineHasItsExactNumber) {
  TestDir d;
  const Lines l = make_lines(600000, 2);
  // Bad lines near the start, in the middle (another piece), and at the end.
  for (double at : {0.001, 0.3, 0.55, 0.999}) {
    const size_t e = static_cast<size_t>(static_cast<double>(l.edges.size()) * at);
    // Find the e-th edge line's offset by counting newlines.
    const uint64_t bad_line = l.line_of[e];
    size_t off = 0;
    for (uint64_t n = 1; n < bad_line; ++n) off = l.text.find('\n', off) + 1;
    std::string text = l.text;
    text.insert(off, "1 x\n");  // the line before the e-th edge
    // A second bad line later, in another piece: must not be the one named.
    const size_t later = text.size() - 100;
    text.insert(text.find('\n', later) + 1, "oops\n");
    const auto path = write(d, "bad.txt", text);
    for (unsigned threads : {1u, 2u, 4u}) {
      auto got = read_all(path, threads);
      ASSERT_FALSE(got) << at;
      EXPECT_NE(got.status().message().find("bad.txt:" + std::to_string(bad_line) +
                                            ": target vertex id 'x' is not a non-negative integer"),
                std::string::npos)
          << threads << " threads, at " << at << ": " << got.status().message();
    }
  }
}

TEST(GraphTextParse, OverlongLineIsRefusedWithItsNumber) {
  TestDir d;
  std::string text;
  for (int i = 0; i < 300000; ++i) text += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  text += std::string(2 << 20, '7') + " 1\n";  // line 300001
  text += "1 2\n";
  const auto path = write(d, "long.txt", text);
  for (unsigned threads : {1u, 2u}) {
    auto got = read_all(path, threads);
    ASSERT_FALSE(got);
    EXPECT_NE(got.status().message().find("long.txt:300001: line longer than 1048576 bytes"), std::string::npos)
        << got.status().message();
  }
}

// Through import: 1 and 4 threads, a file and a FIFO, give the same graph.
TEST(GraphTextParse, ImportIsTheSameWithAnyThreadCountAndFromAStream) {
  TestDir d;
  const Lines l = make_lines(600000, 3);
  const auto path = write(d, "e.txt", l.text);
  auto run = [&](const std::filesystem::path& in, const std::string& out, unsigned threads) {
    ImportOptions o;
    o.threads = threads;
    auto m = import_graph(in, o, d.path() / out);
    EXPECT_TRUE(m) << m.status().message();
    return m ? format_meta(*m) : std::string();
  };
  const std::string one = run(path, "t1", 1);
  EXPECT_EQ(run(path, "t4", 4), one);
  const auto fifo = d.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << l.text; });
  EXPECT_EQ(run(fifo, "stream", 2), one);
  writer.join();
  for (const char* f : {kIndexFile, kAdjacencyFile, kIdMapFile}) {
    const auto want = test::read_file(d.path() / "t1" / f);
    EXPECT_EQ(test::read_file(d.path() / "t4" / f), want) << f;
    EXPECT_EQ(test::read_file(d.path() / "stream" / f), want) << f;
  }
}

}  // namespace
}  // namespace peregrine::graph
