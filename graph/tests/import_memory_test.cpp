// import within --memory, the id map included: when the map of sparse ids
// does not fit a quarter of the budget it is used in slices (a partitioned
// join over scratch files), and the graph is the same bytes as with the
// whole map in memory, as with dense ids, and as from a stream.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <thread>

#include "expect_valid_graph.h"
#include "graph_test_dir.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/importer.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

const std::filesystem::path kData = PEREGRINE_GRAPH_DATA;
constexpr uint64_t kSmall = 64 * 1024;  // the smallest budget

struct Imported {
  GraphMeta meta;
  ImportStats stats;
};

Imported import(const std::filesystem::path& in, const std::filesystem::path& out, uint64_t memory,
                bool directed = false, uint64_t max_slice_ids = 0, unsigned threads = 0) {
  ImportOptions o;
  o.memory_bytes = memory;
  o.threads = threads;
  o.directed = directed;
  o.max_slice_ids = max_slice_ids;
  Imported r;
  auto m = import_graph(in, o, out, {}, &r.stats);
  EXPECT_TRUE(m) << in << ": " << m.status().message();
  if (m) r.meta = *m;
  return r;
}

std::vector<std::vector<char>> graph_files(const std::filesystem::path& dir, bool directed) {
  std::vector<std::vector<char>> files;
  for (const char* f : {kIndexFile, kAdjacencyFile, kIdMapFile, kMetaFile}) files.push_back(test::read_file(dir / f));
  if (directed)
    for (const char* f : {kInIndexFile, kInAdjacencyFile}) files.push_back(test::read_file(dir / f));
  return files;
}

// Random edges among `vertices` ids scattered over 64 bits (so neither a
// range nor a lookup table can stand for the map), with self-loops and
// duplicates; also the same graph with each id replaced by its rank.
struct SparseInput {
  std::string sparse, dense;
  std::vector<uint64_t> ids;  // sorted distinct ids that occur
};

SparseInput sparse_input(uint64_t vertices, uint64_t edges, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> pool(vertices);
  for (auto& id : pool) id = rng();
  SparseInput in;
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (uint64_t i = 0; i < edges; ++i) {
    const uint64_t u = pool[rng() % vertices];
    pairs.emplace_back(u, i % 97 == 0 ? u : pool[rng() % vertices]);
    if (i % 89 == 0) pairs.push_back(pairs.back());
  }
  for (auto [u, v] : pairs) {
    in.ids.push_back(u);
    in.ids.push_back(v);
  }
  std::sort(in.ids.begin(), in.ids.end());
  in.ids.erase(std::unique(in.ids.begin(), in.ids.end()), in.ids.end());
  auto rank = [&](uint64_t id) { return std::lower_bound(in.ids.begin(), in.ids.end(), id) - in.ids.begin(); };
  for (auto [u, v] : pairs) {
    in.sparse += std::to_string(u) + " " + std::to_string(v) + "\n";
    in.dense += std::to_string(rank(u)) + " " + std::to_string(rank(v)) + "\n";
  }
  return in;
}

std::filesystem::path write(const TestDir& d, const std::string& name, const std::string& text) {
  auto p = d.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// 30,000 sparse ids take 240 KB of ids alone: four times the whole 64 KiB
// budget. The import slices the map, never holds more of it than a quarter
// of the budget, and gives the bytes of an import with the whole map.
TEST(GraphImportMemory, IdMapLargerThanTheBudgetIsSliced) {
  TestDir d;
  const auto in = sparse_input(30000, 60000, 5);
  const auto path = write(d, "sparse.txt", in.sparse);
  for (bool directed : {false, true}) {
    const auto small = d.path() / (directed ? "ds" : "us");
    const auto large = d.path() / (directed ? "dl" : "ul");
    const Imported a = import(path, small, kSmall, directed);
    const Imported b = import(path, large, 1ULL << 30, directed);
    EXPECT_EQ(a.meta.vertices, in.ids.size());
    EXPECT_GT(in.ids.size() * sizeof(uint64_t), kSmall);
    EXPECT_GT(a.stats.id_map_slices, 1u);
    EXPECT_GT(a.stats.id_map_bytes, 0u);
    EXPECT_LE(a.stats.id_map_bytes, kSmall / 4);
    EXPECT_EQ(a.stats.input_reads, 2u);  // the edges did not fit: the file was parsed again
    EXPECT_EQ(b.stats.id_map_slices, 1u);
    EXPECT_GE(b.stats.id_map_bytes, in.ids.size() * sizeof(uint64_t));
    EXPECT_EQ(b.stats.input_reads, 1u);
    EXPECT_EQ(graph_files(small, directed), graph_files(large, directed)) << (directed ? "directed" : "undirected");
    test::expect_valid_graph(small);
    // The id map is the sorted distinct ids.
    auto ids = test::read_file(small / kIdMapFile);
    ASSERT_EQ(ids.size(), in.ids.size() * sizeof(uint64_t));
    EXPECT_EQ(std::memcmp(ids.data(), in.ids.data(), ids.size()), 0);
    for (const auto& e : std::filesystem::directory_iterator(small))
      EXPECT_EQ(e.path().filename().string().find(".import-runs"), std::string::npos) << e.path();
  }
}

// The merge opens every run of keys at once, with a read buffer each: at
// the smallest budget the remap must still write runs of tens of
// thousands of keys, not one per few thousand records (which made a
// million-edge import open a thousand files).
TEST(GraphImportMemory, SmallestBudgetWritesFewKeyRuns) {
  TestDir d;
  const uint64_t edges = 200000;
  const auto in = sparse_input(30000, edges, 9);
  const auto path = write(d, "sparse.txt", in.sparse);
  const Imported a = import(path, d.path() / "g", kSmall);
  ASSERT_GT(a.stats.id_map_slices, 1u);
  // One run per slice file read (at most 64Ki records each) and per 64Ki
  // records within one: 2 keys an edge, 2 slice files' worth of reads.
  EXPECT_LE(a.stats.key_runs, 2 * a.stats.id_map_slices + 2 * edges / 65536 + 2) << a.stats.id_map_slices;
  EXPECT_GT(a.stats.key_runs, 0u);
  test::expect_valid_graph(d.path() / "g");
}

// Budgets of megabytes: the sliced join sorts its record batches, the key
// batches and the id batches as two halves on two threads (64Ki records a
// batch here, every slice file several batches, several key runs); the
// graph is still the bytes of the whole-map import, and of one with
// --threads 1, which keeps them on one thread.
TEST(GraphImportMemory, LargeBatchesSortedInTwoHalvesGiveTheSameGraph) {
  TestDir d;
  const auto in = sparse_input(100000, 400000, 21);
  const auto path = write(d, "sparse.txt", in.sparse);
  for (bool directed : {false, true}) {
    const auto sliced = d.path() / (directed ? "ds" : "us");
    const auto whole = d.path() / (directed ? "dw" : "uw");
    const Imported a = import(path, sliced, 8ULL << 20, directed, 30000);
    const Imported b = import(path, whole, 1ULL << 30, directed);
    EXPECT_EQ(a.stats.id_map_slices, (in.ids.size() + 29999) / 30000);
    EXPECT_EQ(a.stats.input_reads, 2u);
    EXPECT_EQ(b.stats.id_map_slices, 1u);
    EXPECT_EQ(a.meta.vertices, in.ids.size());
    EXPECT_GT(a.meta.duplicates, 0u);
    EXPECT_EQ(a.meta.duplicates, b.meta.duplicates);
    EXPECT_EQ(a.meta.self_loops, b.meta.self_loops);
    EXPECT_EQ(graph_files(sliced, directed), graph_files(whole, directed)) << (directed ? "directed" : "undirected");
    test::expect_valid_graph(sliced);
    // --threads 1: every sort and join on one thread, the same bytes.
    const auto one = d.path() / (directed ? "d1" : "u1");
    import(path, one, 8ULL << 20, directed, 30000, 1);
    EXPECT_EQ(graph_files(one, directed), graph_files(whole, directed)) << (directed ? "directed" : "undirected");
  }
}

// The same graph written with dense ids (each id's rank) gives the same CSR:
// slicing maps every sparse id to its rank.
TEST(GraphImportMemory, SlicedSparseIdsEqualTheDenseIdGraph) {
  TestDir d;
  const auto in = sparse_input(30000, 60000, 9);
  const Imported s = import(write(d, "sparse.txt", in.sparse), d.path() / "s", kSmall);
  const Imported n = import(write(d, "dense.txt", in.dense), d.path() / "n", kSmall);
  EXPECT_GT(s.stats.id_map_slices, 1u);
  EXPECT_EQ(n.stats.id_map_slices, 1u);  // 0..n-1: contiguous, no map needed
  EXPECT_EQ(n.stats.id_map_bytes, 0u);
  for (const char* f : {kIndexFile, kAdjacencyFile})
    EXPECT_EQ(test::read_file(d.path() / "s" / f), test::read_file(d.path() / "n" / f)) << f;
  EXPECT_EQ(s.meta.edges, n.meta.edges);
  EXPECT_EQ(s.meta.self_loops, n.meta.self_loops);
  EXPECT_EQ(s.meta.duplicates, n.meta.duplicates);
  EXPECT_GT(s.meta.self_loops, 0u);
  EXPECT_GT(s.meta.duplicates, 0u);
}

// A stream cannot be read twice: its edges go to the scratch file of raw
// pairs, and slicing works from there too.
TEST(GraphImportMemory, SlicedFromAStream) {
  TestDir d;
  const auto in = sparse_input(30000, 60000, 13);
  const auto path = write(d, "sparse.txt", in.sparse);
  const auto fifo = d.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << in.sparse; });
  const Imported a = import(fifo, d.path() / "stream", kSmall);
  writer.join();
  const Imported b = import(path, d.path() / "file", 1ULL << 30);
  EXPECT_GT(a.stats.id_map_slices, 1u);
  EXPECT_EQ(b.stats.id_map_slices, 1u);
  EXPECT_EQ(a.stats.input_reads, 1u);
  EXPECT_EQ(graph_files(d.path() / "stream", false), graph_files(d.path() / "file", false));
}

// Tiny slices (5 ids) on the graphs whose algorithm results are checked
// against networkx (networkx_results_test): the same bytes as one slice,
// Matrix Market included.
TEST(GraphImportMemory, TinySlicesOnTheReferenceGraphs) {
  TestDir d;
  int i = 0;
  for (const char* name : {"karate.txt", "karate.mtx", "path.txt", "star.txt", "dcycle.txt"}) {
    const bool directed = std::string(name) == "dcycle.txt";
    const auto sliced = d.path() / ("s" + std::to_string(i));
    const auto whole = d.path() / ("w" + std::to_string(i++));
    const Imported a = import(kData / name, sliced, 1ULL << 30, directed, 5);
    const Imported b = import(kData / name, whole, 1ULL << 30, directed);
    EXPECT_EQ(b.stats.id_map_slices, 1u) << name;
    // Contiguous ids (karate's 1..34) need no map, so no slices.
    if (a.stats.id_map_bytes != 0) {
      EXPECT_GT(a.stats.id_map_slices, 1u) << name;
    }
    EXPECT_EQ(graph_files(sliced, directed), graph_files(whole, directed)) << name;
  }
}

// A sparse-id version of the karate club (each member k as k * 2^40 + 7):
// sliced, it gives karate's CSR, whose results networkx_results_test checks.
TEST(GraphImportMemory, SparseKarateSlicedEqualsKarate) {
  TestDir d;
  std::ifstream k(kData / "karate.txt");
  std::string line, text;
  while (std::getline(k, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    std::istringstream l(line);
    uint64_t u, v;
    l >> u >> v;
    text += std::to_string(u << 40 | 7) + "\t" + std::to_string(v << 40 | 7) + "\n";
  }
  const Imported s = import(write(d, "sparse-karate.txt", text), d.path() / "s", 1ULL << 30, false, 4);
  const Imported k1 = import(kData / "karate.txt", d.path() / "k", 1ULL << 30);
  EXPECT_EQ(k1.meta.edges, 78u);
  EXPECT_EQ(s.stats.id_map_slices, 9u);  // 34 ids, 4 a slice
  EXPECT_EQ(s.meta.vertices, 34u);
  for (const char* f : {kIndexFile, kAdjacencyFile})
    EXPECT_EQ(test::read_file(d.path() / "s" / f), test::read_file(d.path() / "k" / f)) << f;
  auto g = open_graph(d.path() / "s");
  ASSERT_TRUE(g);
  auto ids = IdMap::load(*g);
  ASSERT_TRUE(ids);
  for (uint64_t v = 0; v < 34; ++v) EXPECT_EQ(ids->user_id(v), (v + 1) << 40 | 7);
}

// Pass 2 parses a large regular file again: if it changed in between
// (here: rewritten when pass 1 is done), import fails naming the file,
// rather than building a graph from two different inputs.
TEST(GraphImportMemory, InputChangedBetweenReadsIsRefused) {
  TestDir d;
  const auto in = sparse_input(3000, 20000, 17);
  struct Case {
    std::string now;  // the file's content once pass 1 is done
    std::string message;
  };
  const std::string rest = in.sparse.substr(in.sparse.find('\n') + 1);
  const Case cases[] = {
      {"1 2\n" + rest, "vertex id 1 was not in it when first read"},  // same line count, an id not seen
      {in.sparse + in.sparse.substr(0, in.sparse.find('\n') + 1), "it now has more than 20"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const auto path = write(d, "changing.txt", in.sparse);
    ImportOptions o;
    o.memory_bytes = kSmall;
    bool changed = false;
    auto progress = [&](std::string_view phase, uint64_t, uint64_t) {
      if (phase == "ids" && !changed) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << c.now;
        changed = true;
      }
    };
    const auto out = d.path() / ("g" + std::to_string(i++));
    auto m = import_graph(path, o, out, progress);
    ASSERT_FALSE(m) << "a changed input imported";
    EXPECT_NE(m.status().message().find("changing.txt: changed while being imported"), std::string::npos)
        << m.status().message();
    EXPECT_NE(m.status().message().find(c.message), std::string::npos) << m.status().message();
    EXPECT_FALSE(std::filesystem::exists(out / kMetaFile));
  }
}

// The same with batches large enough to be sorted and joined as two halves
// on two threads: the id that is missing is reported whichever half has it.
TEST(GraphImportMemory, InputChangedIsRefusedWithLargeBatches) {
  TestDir d;
  const auto in = sparse_input(20000, 300000, 23);
  // The line at 60% of the file becomes "1 2": in the first batch of slice
  // 0's file (about 75,000 records), in its second half.
  const size_t at = in.sparse.find('\n', in.sparse.size() * 6 / 10) + 1;
  const std::string now = in.sparse.substr(0, at) + "1 2" + in.sparse.substr(in.sparse.find('\n', at));
  const auto path = write(d, "changing.txt", in.sparse);
  ImportOptions o;
  o.memory_bytes = 8ULL << 20;
  o.max_slice_ids = 5000;
  bool changed = false;
  auto progress = [&](std::string_view phase, uint64_t, uint64_t) {
    if (phase == "ids" && !changed) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << now;
      changed = true;
    }
  };
  ImportStats stats;
  auto m = import_graph(path, o, d.path() / "g", progress, &stats);
  ASSERT_FALSE(m) << "a changed input imported";
  EXPECT_GT(stats.id_map_slices, 1u);
  EXPECT_NE(m.status().message().find("changing.txt: changed while being imported (vertex id 1 was not in it"),
            std::string::npos)
      << m.status().message();
  EXPECT_FALSE(std::filesystem::exists(d.path() / "g" / kMetaFile));
}

}  // namespace
}  // namespace peregrine::graph
