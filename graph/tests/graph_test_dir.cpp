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

std::filesystem::path generate(const TestDir& dir, const std::string& name, uint32_t scale, uint64_t seed) {
  GenOptions o;
  o.scale = scale;
  o.seed = seed;
  auto out = dir.path() / name;
  auto meta = generate_graph(o, out);
  if (!meta) throw std::runtime_error(meta.status().message());
  return out;
}

std::filesystem::path write_graph(const TestDir& dir, const std::string& name, uint32_t scale,
                                  const std::vector<std::pair<Vertex, Vertex>>& edges) {
  auto out = dir.path() / name;
  std::filesystem::create_directories(out);
  std::vector<uint64_t> keys;
  for (auto [u, v] : edges) {
    if (u == v) continue;
    keys.push_back(pack_edge(u, v));
    keys.push_back(pack_edge(v, u));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  GraphMeta meta;
  meta.scale = scale;
  meta.edgefactor = 0;
  meta.vertices = 1ULL << scale;
  meta.sampled_edges = edges.size();
  auto w = CsrWriter::create(out, meta.vertices);
  if (!w) throw std::runtime_error(w.status().message());
  Status st = w->add(keys);
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
