// The io_uring reader delivers every requested list exactly once, complete
// and in order, whatever the queue depth, read size and coalescing gap,
// from the file or from the lists it keeps in memory.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "graph_test_dir.h"
#include "peregrine/graph/adjacency_reader.h"
#include "peregrine/graph/memory_graph.h"

namespace peregrine::graph {
namespace {

using test::TestDir;

struct Shape {
  unsigned qd;
  uint32_t max_io;
  uint32_t gap;
  bool direct = true;
  bool keep = false;  // keep the lists in memory (a budget that fits them)
};

class AdjacencyReaderTest : public ::testing::TestWithParam<Shape> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TestDir;
    auto path = test::generate(*dir_, "g", 12, 21);
    graph_ = new Graph(std::move(*open_graph(path)));
    mem_ = new MemoryGraph(std::move(*load_memory_graph(*graph_)));
    mem_->graph = graph_;
  }
  static void TearDownTestSuite() {
    delete mem_;
    delete graph_;
    delete dir_;
  }
  std::unique_ptr<AdjacencyReader> open_reader() {
    ReaderOptions o;
    o.queue_depth = GetParam().qd;
    o.max_io_bytes = GetParam().max_io;
    o.coalesce_gap_bytes = GetParam().gap;
    o.direct = GetParam().direct;
    if (GetParam().keep) o.keep_bytes = graph_->meta.adjacency_entries * sizeof(Vertex);
    auto r = AdjacencyReader::open(*graph_, o);
    EXPECT_TRUE(r) << r.status().message();
    if (r && !GetParam().direct) {
      EXPECT_FALSE((*r)->direct());
    }
    return std::move(*r);
  }
  // Concatenates the pieces per vertex, checking the callback contract.
  static NeighbourFn collect(std::map<Vertex, std::vector<Vertex>>* got) {
    return [got](Vertex v, std::span<const Vertex> nb) {
      auto& l = (*got)[v];
      l.insert(l.end(), nb.begin(), nb.end());
    };
  }

  static TestDir* dir_;
  static Graph* graph_;
  static MemoryGraph* mem_;
};
TestDir* AdjacencyReaderTest::dir_;
Graph* AdjacencyReaderTest::graph_;
MemoryGraph* AdjacencyReaderTest::mem_;

TEST_P(AdjacencyReaderTest, ReadAllDeliversEveryList) {
  auto r = open_reader();
  std::map<Vertex, std::vector<Vertex>> got;
  ASSERT_TRUE(r->read_all(collect(&got)));
  uint64_t nonempty = 0;
  for (uint64_t v = 0; v < graph_->num_vertices(); ++v) {
    auto nb = mem_->neighbours(v);
    if (nb.empty()) {
      EXPECT_EQ(got.count(v), 0u) << "empty list of " << v << " delivered";
      continue;
    }
    ++nonempty;
    ASSERT_EQ(got[v], std::vector<Vertex>(nb.begin(), nb.end())) << "vertex " << v;
  }
  EXPECT_EQ(got.size(), nonempty);
  EXPECT_EQ(r->stats().list_bytes, graph_->meta.adjacency_entries * 4);
  EXPECT_GE(r->stats().bytes, r->stats().list_bytes);
  EXPECT_GE(r->stats().reads, 1u);
  EXPECT_EQ(r->kept(), GetParam().keep);
  // A second sweep reads the file again, unless the lists are kept.
  const IoStats first = r->stats();
  std::map<Vertex, std::vector<Vertex>> again;
  ASSERT_TRUE(r->read_all(collect(&again)));
  EXPECT_EQ(again, got);
  if (GetParam().keep) {
    EXPECT_EQ(r->stats().bytes, first.bytes);
    EXPECT_EQ(r->stats().reads, first.reads);
  } else {
    EXPECT_EQ(r->stats().bytes, 2 * first.bytes);
  }
}

TEST_P(AdjacencyReaderTest, ReadListsDeliversOnlyTheBatch) {
  auto r = open_reader();
  // A scattered batch with duplicates, out of order, including the hub.
  std::vector<Vertex> batch;
  uint64_t hub = 0;
  for (uint64_t v = 0; v < graph_->num_vertices(); ++v)
    if (graph_->degree(v) > graph_->degree(hub)) hub = v;
  if (GetParam().max_io == 4096) {
    ASSERT_GT(graph_->degree(hub) * 4, 4096u) << "the hub must need a split read";
  }
  batch.push_back(static_cast<Vertex>(hub));
  for (int v = 4000; v > 0; v -= 37) batch.push_back(static_cast<Vertex>(v));
  batch.push_back(4000);
  std::map<Vertex, std::vector<Vertex>> got;
  ASSERT_TRUE(r->read_lists(batch, collect(&got)));
  std::set<Vertex> want(batch.begin(), batch.end());
  for (Vertex v : want) {
    auto nb = mem_->neighbours(v);
    if (nb.empty()) {
      EXPECT_EQ(got.count(v), 0u);
    } else {
      EXPECT_EQ(got[v], std::vector<Vertex>(nb.begin(), nb.end())) << "vertex " << v;
    }
  }
  for (auto& [v, _] : got) EXPECT_TRUE(want.count(v)) << "vertex " << v << " was not asked for";
}

INSTANTIATE_TEST_SUITE_P(Shapes, AdjacencyReaderTest,
                         ::testing::Values(Shape{64, 256 * 1024, 16 * 1024},  // defaults
                                           Shape{1, 4096, 0},                 // one 4K read at a time, no coalescing
                                           Shape{8, 8192, 1 << 20},           // hub lists split over many reads
                                           Shape{256, 65536, 0}, Shape{32, 1 << 20, 0},
                                           Shape{16, 65536, 4096, false},                 // page cache path
                                           Shape{64, 256 * 1024, 16 * 1024, true, true},  // kept in memory
                                           Shape{3, 4096, 0, true, true},  // kept, loaded in many small reads
                                           Shape{16, 65536, 4096, false, true}),
                         [](const auto& info) {
                           return "qd" + std::to_string(info.param.qd) + "_io" + std::to_string(info.param.max_io) +
                                  "_gap" + std::to_string(info.param.gap) + (info.param.direct ? "" : "_buffered") +
                                  (info.param.keep ? "_kept" : "");
                         });

// The budget decides: a byte short of the lists' size reads the file on
// every pass; the size itself keeps them, and kept_list() is each list.
TEST(AdjacencyReader, KeepsTheListsOnlyWhenTheyFitTheBudget) {
  TestDir d;
  auto g = open_graph(test::generate(d, "k", 10, 5));
  ASSERT_TRUE(g) << g.status().message();
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m);
  m->graph = &*g;
  const uint64_t size = g->meta.adjacency_entries * sizeof(Vertex);
  for (uint64_t budget : {uint64_t{0}, size - 1, size}) {
    ReaderOptions o;
    o.keep_bytes = budget;
    auto r = AdjacencyReader::open(*g, o);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ((*r)->keep_size(), size);
    ASSERT_TRUE((*r)->keep_if_fits());
    ASSERT_EQ((*r)->kept(), budget == size) << "budget " << budget;
    EXPECT_EQ((*r)->stats().bytes, budget == size ? size : 0) << "the load reads the file once, and only then";
    if (!(*r)->kept()) continue;
    for (uint64_t v = 0; v < g->num_vertices(); ++v) {
      auto want = m->neighbours(v);
      auto got = (*r)->kept_list(static_cast<Vertex>(v));
      ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << "vertex " << v;
    }
  }
}

// A weighted graph's lists come with their weights, piece by piece, from
// any read shape: each piece's weights are those of its entries.
TEST(AdjacencyReader, WeightsArriveBesideTheirNeighbours) {
  TestDir d;
  auto path = test::generate(d, "w", 11, 3, /*weighted=*/true);
  auto g = open_graph(path);
  ASSERT_TRUE(g) << g.status().message();
  auto m = load_memory_graph(*g);
  ASSERT_TRUE(m) << m.status().message();
  m->graph = &*g;
  for (Shape shape : {Shape{64, 256 * 1024, 16 * 1024}, Shape{3, 4096, 0}, Shape{2, 8192, 4096, false},
                      Shape{3, 4096, 0, true, true}, Shape{2, 8192, 4096, false, true}}) {
    ReaderOptions o;
    o.queue_depth = shape.qd;
    o.max_io_bytes = shape.max_io;
    o.coalesce_gap_bytes = shape.gap;
    o.direct = shape.direct;
    o.weights = true;
    if (shape.keep) o.keep_bytes = 1ULL << 30;
    auto r = AdjacencyReader::open(*g, o);
    ASSERT_TRUE(r) << r.status().message();
    std::map<Vertex, std::vector<std::pair<Vertex, uint32_t>>> got;
    Status st = (*r)->read_all([&](Vertex v, std::span<const Vertex> nb, std::span<const uint32_t> w) {
      ASSERT_EQ(nb.size(), w.size());
      for (size_t i = 0; i < nb.size(); ++i) got[v].push_back({nb[i], w[i]});
    });
    ASSERT_TRUE(st) << st.message();
    ASSERT_EQ((*r)->kept(), shape.keep);
    std::vector<Vertex> some{5, 900, 17, 2047};
    std::map<Vertex, std::vector<std::pair<Vertex, uint32_t>>> batch;
    st = (*r)->read_lists(some, [&](Vertex v, std::span<const Vertex> nb, std::span<const uint32_t> w) {
      for (size_t i = 0; i < nb.size(); ++i) batch[v].push_back({nb[i], w[i]});
    });
    ASSERT_TRUE(st) << st.message();
    for (uint64_t v = 0; v < g->num_vertices(); ++v) {
      std::vector<std::pair<Vertex, uint32_t>> want;
      for (size_t i = 0; i < m->neighbours(v).size(); ++i) want.push_back({m->neighbours(v)[i], m->weights_of(v)[i]});
      if (want.empty()) continue;
      ASSERT_EQ(got[static_cast<Vertex>(v)], want) << "vertex " << v << ", qd " << shape.qd;
      if (batch.count(static_cast<Vertex>(v))) {
        EXPECT_EQ(batch[static_cast<Vertex>(v)], want) << v;
      }
    }
    EXPECT_EQ(batch.size(), 4u);
  }
}

TEST(AdjacencyReader, WeightsOfAnUnweightedGraphAreRefused) {
  TestDir d;
  auto g = open_graph(test::generate(d, "u", 8));
  ASSERT_TRUE(g);
  ReaderOptions o;
  o.weights = true;
  auto r = AdjacencyReader::open(*g, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("the graph has no weights"), std::string::npos) << r.status().message();
  auto plain = AdjacencyReader::open(*g, ReaderOptions{});
  ASSERT_TRUE(plain);
  std::vector<Vertex> vs{1};
  Status st = (*plain)->read_lists(vs, [](Vertex, std::span<const Vertex>, std::span<const uint32_t>) {});
  EXPECT_FALSE(st);
}

TEST(AdjacencyReader, RejectsBadOptions) {
  TestDir d;
  auto g = open_graph(test::generate(d, "g", 10));
  ASSERT_TRUE(g);
  ReaderOptions o;
  o.max_io_bytes = 5000;
  auto r = AdjacencyReader::open(*g, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("multiple of 4096"), std::string::npos);
  o = ReaderOptions{};
  o.queue_depth = 0;
  EXPECT_FALSE(AdjacencyReader::open(*g, o));
}

}  // namespace
}  // namespace peregrine::graph
