#include "graph_test_dir.h"

#include <fcntl.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "peregrine/graph/csr_writer.h"
#include "peregrine/graph/edge_runs.h"
#include "peregrine/graph/generator.h"

namespace peregrine::graph::test {
namespace {

bool supports_direct_io(const std::filesystem::path& base) {
  auto probe = base / ("peregrine-graph-odirect-" + std::to_string(::getpid()));
  int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

}  // namespace

TestDir::TestDir() {
  std::filesystem::path base = "/tmp";
  if (const char* env = std::getenv("PEREGRINE_GRAPH_DIR"); env && *env) {
    base = env;
  } else if (!supports_direct_io(base)) {
    std::cerr << "graph tests: /tmp refuses O_DIRECT; using /var/tmp\n";
    base = "/var/tmp";
  }
  std::string tmpl = (base / "peregrine-graph-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp under " + base.string() + " failed");
  path_ = tmpl;
}

TestDir::~TestDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path generate(const TestDir& dir, const std::string& name, uint32_t scale, uint64_t seed,
                               bool weighted) {
  GenOptions o;
  o.scale = scale;
  o.seed = seed;
  o.weighted = weighted;
  auto out = dir.path() / name;
  auto meta = generate_graph(o, out);
  if (!meta) throw std::runtime_error(meta.status().message());
  return out;
}

std::filesystem::path write_graph(const TestDir& dir, const std::string& name, uint32_t scale,
                                  const std::vector<std::pair<Vertex, Vertex>>& edges) {
  std::vector<WeightedEdge> unweighted;
  for (auto [u, v] : edges) unweighted.push_back({u, v, 0});
  return write_weighted_graph(dir, name, scale, unweighted, /*weighted=*/false);
}

std::filesystem::path write_weighted_graph(const TestDir& dir, const std::string& name, uint32_t scale,
                                           const std::vector<WeightedEdge>& edges, bool weighted) {
  auto out = dir.path() / name;
  std::filesystem::create_directories(out);
  std::vector<std::pair<uint64_t, uint32_t>> entries;  // key, weight
  for (const WeightedEdge& e : edges) {
    if (e.u == e.v) continue;
    entries.push_back({pack_edge(e.u, e.v), e.weight});
    entries.push_back({pack_edge(e.v, e.u), e.weight});
  }
  std::sort(entries.begin(), entries.end());  // a duplicate keeps its smallest weight
  entries.erase(std::unique(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.first == b.first; }),
                entries.end());
  std::vector<uint64_t> keys;
  std::vector<uint32_t> weights;
  for (auto [k, w] : entries) {
    keys.push_back(k);
    weights.push_back(w);
  }
  GraphMeta meta;
  meta.scale = scale;
  meta.edgefactor = 0;
  meta.vertices = 1ULL << scale;
  meta.sampled_edges = edges.size();
  auto w = weighted ? CsrWriter::create_weighted(out, meta.vertices) : CsrWriter::create(out, meta.vertices);
  if (!w) throw std::runtime_error(w.status().message());
  Status st = weighted ? w->add(keys, weights) : w->add(keys);
  if (st) st = w->finish(&meta);
  if (st) st = write_meta(out, meta);
  if (!st) throw std::runtime_error(st.message());
  return out;
}

std::vector<char> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace peregrine::graph::test
