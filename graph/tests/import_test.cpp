// import: every input format gives the same graph, the vertices are the ids
// that occur (remapped, the map kept), self-loops and duplicates are dropped
// and counted, memory is bounded by external sort, and bad input names the
// file and line.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "edge_list_file.h"
#include "expect_valid_graph.h"
#include "fifo_input.h"
#include "graph_test_dir.h"
#include "peregrine/graph/csr_check.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/importer.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {
namespace {

using test::FifoInput;
using test::TestDir;
using test::text_pairs;

const std::filesystem::path kData = PEREGRINE_GRAPH_DATA;

std::filesystem::path write(const TestDir& d, const std::string& name, const std::string& text) {
  auto p = d.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

Expected<GraphMeta> import(const std::filesystem::path& in, const std::filesystem::path& out, bool directed = false,
                           InputFormat f = InputFormat::kAuto, uint64_t memory = 1ULL << 30) {
  ImportOptions o;
  o.format = f;
  o.directed = directed;
  o.memory_bytes = memory;
  return import_graph(in, o, out);
}

std::string import_error(const std::filesystem::path& in, const TestDir& d, InputFormat f = InputFormat::kAuto) {
  auto m = import(in, d.path() / "bad", false, f);
  EXPECT_FALSE(m) << in << " imported";
  return m ? "" : m.status().message();
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

template <typename T>
std::filesystem::path write_binary(const TestDir& d, const std::string& name,
                                   const std::vector<std::pair<uint64_t, uint64_t>>& pairs) {
  std::string bytes;
  for (auto [u, v] : pairs) {
    T a = static_cast<T>(u), b = static_cast<T>(v);
    bytes.append(reinterpret_cast<const char*>(&a), sizeof a);
    bytes.append(reinterpret_cast<const char*>(&b), sizeof b);
  }
  return write(d, name, bytes);
}

TEST(GraphImport, StarCountsSelfLoopsAndDuplicates) {
  TestDir d;
  auto m = import(kData / "star.txt", d.path() / "g");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 9u);
  EXPECT_EQ(m->input_edges, 11u);  // 8 spokes, "5 5", "0 1", "1 0"
  EXPECT_EQ(m->self_loops, 1u);
  EXPECT_EQ(m->duplicates, 2u);  // undirected: "1 0" repeats "0 1"
  EXPECT_EQ(m->edges, 8u);
  EXPECT_EQ(m->adjacency_entries, 16u);
  EXPECT_FALSE(m->directed);
  EXPECT_TRUE(m->imported);
  test::expect_valid_graph(d.path() / "g");
}

TEST(GraphImport, SparseIdsAreRemappedAndKept) {
  TestDir d;
  auto m = import(kData / "path.txt", d.path() / "g");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 9u);
  auto g = open_graph(d.path() / "g");
  ASSERT_TRUE(g);
  auto ids = IdMap::load(*g);
  ASSERT_TRUE(ids) << ids.status().message();
  for (uint64_t v = 0; v < 9; ++v) {
    EXPECT_EQ(ids->user_id(v), 100 * (v + 1));
    EXPECT_EQ(ids->find(100 * (v + 1)), v);
  }
  EXPECT_FALSE(ids->find(150));
  EXPECT_FALSE(ids->find(0));
  EXPECT_FALSE(ids->find(1000));
  // The path 100-200-...-900 becomes 0-1-...-8.
  auto mem = load_memory_graph(*g);
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->adjacency, (std::vector<Vertex>{1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7}));
}

// As networkx's read_edgelist: a self-loop line makes its vertex exist.
TEST(GraphImport, SelfLoopLineMakesTheVertex) {
  TestDir d;
  auto m = import(write(d, "e.txt", "1 2\n7 7\n"), d.path() / "g");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 3u);
  EXPECT_EQ(m->edges, 1u);
  EXPECT_EQ(m->self_loops, 1u);
  auto g = open_graph(d.path() / "g");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->degree(2), 0u);  // vertex 7, isolated
}

TEST(GraphImport, HugeIdsUpToTwoToThe64Minus1) {
  TestDir d;
  auto m = import(write(d, "e.txt", "18446744073709551615 0\n0 4294967296\n"), d.path() / "g");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 3u);
  auto g = open_graph(d.path() / "g");
  ASSERT_TRUE(g);
  auto ids = IdMap::load(*g);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->user_id(0), 0u);
  EXPECT_EQ(ids->user_id(1), 4294967296u);
  EXPECT_EQ(ids->user_id(2), 18446744073709551615u);
  test::expect_valid_graph(d.path() / "g");
}

// Text with weights and tabs, Matrix Market symmetric, bin32 and bin64:
// byte-identical CSR and id map.
TEST(GraphImport, EveryFormatGivesTheSameGraph) {
  TestDir d;
  auto pairs = text_pairs(kData / "karate.txt");
  ASSERT_EQ(pairs.size(), 78u);
  struct Input {
    std::filesystem::path path;
    InputFormat format;
  };
  const Input inputs[] = {
      {kData / "karate.txt", InputFormat::kText},
      {kData / "karate.mtx", InputFormat::kAuto},
      {kData / "karate.mtx", InputFormat::kMatrixMarket},
      {write_binary<uint32_t>(d, "k.bin32", pairs), InputFormat::kBin32},
      {write_binary<uint64_t>(d, "k.bin64", pairs), InputFormat::kBin64},
  };
  std::vector<std::vector<char>> first;
  int i = 0;
  for (const auto& in : inputs) {
    auto out = d.path() / ("g" + std::to_string(i++));
    auto m = import(in.path, out, false, in.format);
    ASSERT_TRUE(m) << in.path << ": " << m.status().message();
    EXPECT_EQ(m->vertices, 34u) << in.path;
    EXPECT_EQ(m->edges, 78u) << in.path;
    test::expect_valid_graph(out);
    std::vector<std::vector<char>> files = {test::read_file(out / kIndexFile), test::read_file(out / kAdjacencyFile),
                                            test::read_file(out / kIdMapFile)};
    if (first.empty())
      first = files;
    else
      EXPECT_EQ(files, first) << in.path << " (" << input_format_name(in.format) << ") differs from the text import";
  }
}

TEST(GraphImport, DirectedKeepsArcsAndWritesTheTranspose) {
  TestDir d;
  auto m = import(kData / "dcycle.txt", d.path() / "g", true);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_TRUE(m->directed);
  EXPECT_EQ(m->vertices, 7u);
  EXPECT_EQ(m->edges, 8u);
  EXPECT_EQ(m->adjacency_entries, 8u);
  test::expect_valid_graph(d.path() / "g");
  auto g = open_graph(d.path() / "g");
  ASSERT_TRUE(g);
  auto t = open_transpose(*g);
  ASSERT_TRUE(t);
  EXPECT_EQ(g->degree(5), 1u);  // 6 -> 1
  EXPECT_EQ(t->degree(5), 0u);  // nothing enters 6
  EXPECT_EQ(g->degree(6), 0u);  // 7 is a sink
  EXPECT_EQ(t->degree(0), 2u);  // 5 -> 1, 6 -> 1
  // Undirected, the same file: 1-3 and 3-1 are distinct arcs but one edge.
  auto u = import(write(d, "two.txt", "1 3\n3 1\n"), d.path() / "u");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->edges, 1u);
  EXPECT_EQ(u->duplicates, 1u);
  auto dd = import(write(d, "two2.txt", "1 3\n3 1\n"), d.path() / "dd", true);
  ASSERT_TRUE(dd);
  EXPECT_EQ(dd->edges, 2u);
  EXPECT_EQ(dd->duplicates, 0u);
}

// A generated graph written out as a text edge list (each edge once, in
// random line order) imports back to the same lists, vertex for vertex
// through the id map; vertices without edges are not in the input, so
// they are not in the import either.
TEST(GraphImport, GeneratedGraphRoundTripsThroughText) {
  TestDir d;
  auto gen_dir = test::generate(d, "k", 12, 5);
  auto g = open_graph(gen_dir);
  ASSERT_TRUE(g);
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m);
  std::vector<std::string> lines;
  for (uint64_t u = 0; u < g->num_vertices(); ++u)
    for (Vertex v : m->neighbours(u))
      if (u < v) lines.push_back(std::to_string(v) + "\t" + std::to_string(u) + "\n");
  std::shuffle(lines.begin(), lines.end(), std::mt19937_64(11));
  std::string text;
  for (const auto& l : lines) text += l;
  auto meta = import(write(d, "k.txt", text), d.path() / "i", false, InputFormat::kText, 64 * 1024);
  ASSERT_TRUE(meta) << meta.status().message();
  EXPECT_EQ(meta->edges, g->meta.edges);
  EXPECT_EQ(meta->duplicates, 0u);
  auto ig = open_graph(d.path() / "i");
  ASSERT_TRUE(ig);
  auto im = load_memory_graph(*ig);
  ASSERT_TRUE(im);
  auto ids = IdMap::load(*ig);
  ASSERT_TRUE(ids);
  uint64_t with_edges = 0;
  for (uint64_t u = 0; u < g->num_vertices(); ++u) with_edges += g->degree(u) > 0;
  EXPECT_EQ(ig->num_vertices(), with_edges);
  for (uint64_t v = 0; v < ig->num_vertices(); ++v) {
    const uint64_t u = ids->user_id(v);
    std::vector<uint64_t> mapped;
    for (Vertex w : im->neighbours(v)) mapped.push_back(ids->user_id(w));
    const auto want = m->neighbours(u);
    ASSERT_EQ(mapped, std::vector<uint64_t>(want.begin(), want.end())) << "vertex " << u;
  }
}

// 64 KiB of sort memory forces many id and edge runs; the bytes must equal
// a one-run import, directed and undirected, and no scratch file is left.
TEST(GraphImport, SmallMemoryBudgetGivesTheSameBytes) {
  TestDir d;
  std::mt19937_64 rng(7);
  std::string text;
  for (int i = 0; i < 40000; ++i) {
    uint64_t u = rng() % 5000 * 1000003, v = rng() % 5000 * 1000003;  // sparse ids
    text += std::to_string(u) + " " + std::to_string(v) + "\n";
  }
  auto in = write(d, "big.txt", text);
  for (bool directed : {false, true}) {
    auto small = d.path() / (directed ? "ds" : "us");
    auto large = d.path() / (directed ? "dl" : "ul");
    auto a = import(in, small, directed, InputFormat::kText, 64 * 1024);
    auto b = import(in, large, directed, InputFormat::kText, 1ULL << 30);
    ASSERT_TRUE(a) << a.status().message();
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_EQ(a->edges, b->edges);
    EXPECT_EQ(a->duplicates, b->duplicates);
    EXPECT_EQ(format_meta(*a), format_meta(*b));
    for (const char* f : {kIndexFile, kAdjacencyFile, kIdMapFile})
      EXPECT_EQ(test::read_file(small / f), test::read_file(large / f)) << f;
    if (directed) {
      for (const char* f : {kInIndexFile, kInAdjacencyFile})
        EXPECT_EQ(test::read_file(small / f), test::read_file(large / f)) << f;
    }
    test::expect_valid_graph(small);
    for (const auto& e : std::filesystem::directory_iterator(small))
      EXPECT_EQ(e.path().filename().string().find(".import-runs"), std::string::npos) << e.path();
  }
}

// The three ways find() works (binary search, bucket index, lookup table)
// agree, for ids present and absent, dense and scattered over 64 bits.
TEST(GraphImport, IdMapLookupsAgree) {
  std::mt19937_64 rng(3);
  for (uint64_t spread : {uint64_t{3}, uint64_t{1000003}, ~uint64_t{0} / 5000}) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < 5000; ++i) ids.push_back(rng() % 5000 * spread);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const IdMap plain = IdMap::sorted(ids, 0);
    const IdMap buckets = IdMap::sorted(ids, 64 * 1024);
    const IdMap table = IdMap::sorted(ids, 1ULL << 30);
    EXPECT_EQ(plain.lookup_bytes(), 0u);
    EXPECT_GT(buckets.lookup_bytes(), 0u) << spread;
    for (uint64_t v = 0; v < ids.size(); ++v) {
      for (const IdMap* m : {&plain, &buckets, &table}) {
        ASSERT_EQ(m->find(ids[v]), v) << spread;
        ASSERT_EQ(m->user_id(v), ids[v]);
      }
    }
    for (int i = 0; i < 20000; ++i) {
      const uint64_t probe = i % 2 ? rng() : rng() % 5000 * spread + 1;
      const auto want = plain.find(probe);
      EXPECT_EQ(buckets.find(probe), want) << probe;
      EXPECT_EQ(table.find(probe), want) << probe;
    }
  }
}

TEST(GraphImport, BadLinesNameFileAndLine) {
  TestDir d;
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"1 2\n# ok\nfoo bar\n", "bad.txt:3: source vertex id 'foo' is not a non-negative integer"},
      {"1 2\n2\n", "bad.txt:2: expected target vertex id, found end of line"},
      {"1 2\n\n-1 2\n", "bad.txt:3: source vertex id '-1' is not a non-negative integer"},
      {"1.5 2\n", "bad.txt:1: source vertex id '1.5' is not a non-negative integer"},
      {"1 2x 0.5\n", "bad.txt:1: target vertex id '2x' is not a non-negative integer"},
      {"1 2\n3 18446744073709551616\n", "bad.txt:2: target vertex id '18446744073709551616' does not fit in 64 bits"},
      {"1,2\n", "bad.txt:1: source vertex id '1,2' is not a non-negative integer (comma-separated?"},
      // Digits past 64 bits, then more: not a number at all.
      {"1 99999999999999999999x\n", "bad.txt:1: target vertex id '99999999999999999999x' is not a non-negative"},
      // Control bytes are shown escaped, and a long field cut short.
      {"1 2\x1b[31m\n", "bad.txt:1: target vertex id '2\\x1b[31m' is not a non-negative integer"},
      {"1 " + std::string(100, '7') + "y\n", "bad.txt:1: target vertex id '" + std::string(40, '7') + "...' is not"},
  };
  for (const auto& c : cases) EXPECT_CONTAINS(import_error(write(d, "bad.txt", c.text), d), c.message);
}

TEST(GraphImport, CrlfAndBlankSpaceAreAccepted) {
  TestDir d;
  auto m = import(write(d, "crlf.txt", "\xEF\xBB\xBF# windows, with a byte order mark\r\n1\t2\r\n  2   3  \r\n\r\n3 1"),
                  d.path() / "g");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 3u);
  EXPECT_EQ(m->edges, 3u);
}

TEST(GraphImport, EmptyInputIsRefused) {
  TestDir d;
  EXPECT_CONTAINS(import_error(write(d, "empty.txt", ""), d), "empty.txt: empty file (no edges)");
  EXPECT_CONTAINS(import_error(write(d, "comments.txt", "# nothing\n%\n\n"), d),
                  "comments.txt: no edges (only comments or blank lines)");
  EXPECT_CONTAINS(import_error(write(d, "empty.bin", ""), d, InputFormat::kBin32), "empty file");
  EXPECT_CONTAINS(import_error(d.path() / "absent.txt", d), "absent.txt: cannot open");
  EXPECT_FALSE(std::filesystem::exists(d.path() / "bad" / kMetaFile));
}

std::string slurp(const std::filesystem::path& p) {
  auto v = test::read_file(p);
  return std::string(v.begin(), v.end());
}

TEST(GraphImport, StreamsGiveTheSameGraphAsFiles) {
  TestDir d;
  auto pairs = text_pairs(kData / "karate.txt");
  struct Input {
    std::filesystem::path file;
    InputFormat format;
  };
  const Input inputs[] = {
      {kData / "karate.txt", InputFormat::kAuto},
      {kData / "karate.mtx", InputFormat::kAuto},  // told from its first line
      {write_binary<uint32_t>(d, "k.bin32", pairs), InputFormat::kBin32},
      {write_binary<uint64_t>(d, "k.bin64", pairs), InputFormat::kBin64},
  };
  int i = 0;
  for (const auto& in : inputs) {
    const std::string n = std::to_string(i++);
    auto from_file = import(in.file, d.path() / ("file" + n), false, in.format);
    ASSERT_TRUE(from_file) << in.file << ": " << from_file.status().message();
    FifoInput fifo(d, "fifo" + n, slurp(in.file));
    auto from_stream = import(fifo.path(), d.path() / ("stream" + n), false, in.format);
    fifo.wait();
    ASSERT_TRUE(from_stream) << in.file << " as a stream: " << from_stream.status().message();
    EXPECT_EQ(format_meta(*from_stream), format_meta(*from_file)) << in.file;
    for (const char* f : {kIndexFile, kAdjacencyFile, kIdMapFile})
      EXPECT_EQ(test::read_file(d.path() / ("stream" + n) / f), test::read_file(d.path() / ("file" + n) / f))
          << in.file << ": " << f;
  }
}

TEST(GraphImport, StreamErrorsNameTheStreamAndLine) {
  TestDir d;
  {
    FifoInput fifo(d, "empty", "");
    EXPECT_CONTAINS(import_error(fifo.path(), d), "empty: no edges (only comments or blank lines)");
  }
  {
    FifoInput fifo(d, "badline", "1 2\n2 x\n");
    EXPECT_CONTAINS(import_error(fifo.path(), d), "badline:2: target vertex id 'x' is not a non-negative integer");
  }
  {
    FifoInput fifo(d, "odd", std::string(20, '\0'));
    EXPECT_CONTAINS(import_error(fifo.path(), d, InputFormat::kBin64),
                    "odd: 20 bytes is not a whole number of 16-byte pairs (bin64)");
  }
  EXPECT_FALSE(std::filesystem::exists(d.path() / "bad" / kMetaFile));
}

TEST(GraphImport, BinaryWithTrailingBytesIsRefused) {
  TestDir d;
  EXPECT_CONTAINS(import_error(write(d, "odd.bin", std::string(20, '\0')), d, InputFormat::kBin64),
                  "odd.bin: 20 bytes is not a whole number of 16-byte pairs (bin64)");
  EXPECT_CONTAINS(import_error(write(d, "odd.bin", std::string(12, '\0')), d, InputFormat::kBin32),
                  "12 bytes is not a whole number of 8-byte pairs (bin32)");
}

TEST(GraphImport, MatrixMarketErrors) {
  TestDir d;
  const std::string banner = "%%MatrixMarket matrix coordinate pattern general\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "bad.mtx:1: Matrix Market format 'array'"},
      {banner + "3 4 1\n1 2\n", "bad.mtx:2: matrix is 3 x 4: an adjacency matrix must be square"},
      {banner + "% c\n3 3 2\n1 2\n4 1\n", "bad.mtx:5: index 4 out of range 1..3"},
      {banner + "3 3 2\n0 1\n", "bad.mtx:3: index 0 out of range 1..3"},
      {banner + "3 3 3\n1 2\n2 3\n", "end of file after 2 entries; the size line declares 3"},
      {banner + "3 3 1\n1 2\n2 3\n", "bad.mtx:4: more entries than the 1 the size line declares"},
      {banner + "% only comments\n", "no size line"},
      {banner + "4294967297 4294967297 1\n1 2\n",
       "bad.mtx:2: matrix has 4294967297 rows; at most 2^32 vertices are supported"},
      {"%%MatrixMarket matrix coordinate pattern weird\n", "bad.mtx:1: unknown Matrix Market symmetry 'weird'"},
  };
  for (const auto& c : cases)
    EXPECT_CONTAINS(import_error(write(d, "bad.mtx", c.text), d, InputFormat::kMatrixMarket), c.message);
}

// The id map's size is checked against the graph before it is read: a
// file of any other size is named, with both sizes.
TEST(GraphImport, AnIdMapOfTheWrongSizeFailsTheCheck) {
  TestDir d;
  ASSERT_TRUE(import(write(d, "e.txt", "10 20\n20 30\n"), d.path() / "g"));
  auto g = open_graph(d.path() / "g");
  ASSERT_TRUE(g) << g.status().message();
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_TRUE(check_graph(*m));
  std::filesystem::resize_file(d.path() / "g" / kIdMapFile, uint64_t{1} << 30);  // sparse
  Status st = check_graph(*m);
  ASSERT_FALSE(st);
  EXPECT_CONTAINS(st.message(), "ids.u64: 1073741824 bytes, expected 24");
}

// Matrix Market declares its vertices: 1..rows exist even without entries.
TEST(GraphImport, MatrixMarketDeclaresItsVertices) {
  TestDir d;
  auto m = import(write(d, "m.mtx", "%%MatrixMarket matrix coordinate real general\n5 5 2\n1 2 0.5\n3 3 1\n"),
                  d.path() / "g", true);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->vertices, 5u);
  EXPECT_EQ(m->edges, 1u);
  EXPECT_EQ(m->self_loops, 1u);
  test::expect_valid_graph(d.path() / "g");
}

}  // namespace
}  // namespace peregrine::graph
