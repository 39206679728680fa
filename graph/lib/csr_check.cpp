#include "peregrine/graph/csr_check.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "peregrine/graph/id_map.h"
#include "peregrine/util/crc32c.h"

namespace peregrine::graph {
namespace {

uint32_t crc_of(const void* data, size_t len) {
  // crc32c() takes an int length: feed large arrays in pieces.
  const char* p = static_cast<const char*>(data);
  uint32_t crc = 0;
  while (len > 0) {
    size_t n = std::min<size_t>(len, 1 << 30);
    crc = crc32c(p, n, crc);
    p += n;
    len -= n;
  }
  return crc;
}

std::string hex(uint32_t x) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", x);
  return b;
}

// Checksums of one index/adjacency pair, then every list's own invariants.
Status check_lists(const MemoryGraph& m, uint32_t index_crc, uint32_t adjacency_crc, const char* index_file) {
  const Graph& g = *m.graph;
  const std::string adj = g.adjacency_path().string();
  uint32_t icrc = crc_of(g.offsets.data(), g.offsets.size() * sizeof(uint64_t));
  if (icrc != index_crc)
    return Status::error(
        EIO, (g.dir / index_file).string() + ": checksum " + hex(icrc) + " != " + hex(index_crc) + " in graph.meta");
  uint32_t acrc = crc_of(m.adjacency.data(), m.adjacency.size() * sizeof(Vertex));
  if (acrc != adjacency_crc)
    return Status::error(EIO, adj + ": checksum " + hex(acrc) + " != " + hex(adjacency_crc) + " in graph.meta");
  const uint64_t n = g.num_vertices();
  for (uint64_t u = 0; u < n; ++u) {
    auto nb = m.neighbours(u);
    for (size_t i = 0; i < nb.size(); ++i) {
      const uint64_t v = nb[i];
      if (v < n && v != u && (i == 0 || nb[i - 1] < v)) continue;
      const std::string where = adj + ": vertex " + std::to_string(u) + ": ";
      if (v >= n) return Status::error(EIO, where + "neighbour " + std::to_string(v) + " out of range");
      if (v == u) return Status::error(EIO, where + "self-loop");
      return Status::error(EIO, where + "list not strictly ascending");
    }
  }
  return Status::ok();
}

Status check_id_map(const Graph& g) {
  if (!g.meta.has_id_map) return Status::ok();
  auto path = g.dir / kIdMapFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(ENOENT, path.string() + ": missing");
  // Its size first: a file far larger than the map is not read into memory.
  const uint64_t want = g.num_vertices() * sizeof(uint64_t);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::error(ec.value(), path.string() + ": " + ec.message());
  if (size != want)
    return Status::error(EIO, path.string() + ": " + std::to_string(size) + " bytes, expected " + std::to_string(want));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() != want)
    return Status::error(
        EIO, path.string() + ": " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want));
  uint32_t crc = crc_of(bytes.data(), bytes.size());
  if (crc != g.meta.id_map_crc32c)
    return Status::error(
        EIO, path.string() + ": checksum " + hex(crc) + " != " + hex(g.meta.id_map_crc32c) + " in graph.meta");
  auto map = IdMap::load(g);  // checks the ids ascend
  return map ? Status::ok() : map.status();
}

// A weighted graph's weights: their checksum, and on an undirected graph
// one weight per edge (u->v weighs what v->u does).
Status check_weights(const MemoryGraph& m) {
  const Graph& g = *m.graph;
  if (!g.weighted()) return Status::ok();
  const std::string path = g.weights_path().string();
  const uint32_t wcrc = crc_of(m.weights.data(), m.weights.size() * sizeof(uint32_t));
  if (wcrc != g.meta.weights_crc32c)
    return Status::error(EIO,
                         path + ": checksum " + hex(wcrc) + " != " + hex(g.meta.weights_crc32c) + " in graph.meta");
  uint32_t largest = 0;
  for (uint32_t w : m.weights) largest = std::max(largest, w);
  if (largest != g.meta.max_weight)
    return Status::error(EIO, path + ": largest weight " + std::to_string(largest) + " != max_weight " +
                                  std::to_string(g.meta.max_weight) + " in graph.meta");
  if (g.directed()) return Status::ok();
  for (uint64_t u = 0; u < g.num_vertices(); ++u) {
    const auto nbrs = m.neighbours(u);
    for (size_t i = 0; i < nbrs.size(); ++i) {
      const auto back = m.neighbours(nbrs[i]);
      const auto at = std::lower_bound(back.begin(), back.end(), static_cast<Vertex>(u));
      if (at == back.end() || *at != u) continue;  // the symmetry check reports it
      const uint32_t w = m.weights_of(u)[i];
      const uint32_t w_back = m.weights_of(nbrs[i])[static_cast<size_t>(at - back.begin())];
      if (w != w_back)
        return Status::error(EIO, path + ": edge " + std::to_string(u) + "-" + std::to_string(nbrs[i]) + " weighs " +
                                      std::to_string(w) + " one way and " + std::to_string(w_back) +
                                      " the other (an undirected edge has one weight)");
    }
  }
  return Status::ok();
}

}  // namespace

Status check_graph(const MemoryGraph& m, const MemoryGraph* t) {
  const Graph& g = *m.graph;
  Status st = check_lists(m, g.meta.index_crc32c, g.meta.adjacency_crc32c, kIndexFile);
  if (!st) return st;
  st = check_id_map(g);
  if (!st) return st;
  st = check_weights(m);
  if (!st) return st;
  const std::string adj = g.adjacency_path().string();
  const uint64_t n = g.num_vertices();
  if (g.directed()) {
    if (t == nullptr) return Status::error(EINVAL, g.dir.string() + ": directed graph checked without its in-lists");
    st = check_lists(*t, g.meta.in_index_crc32c, g.meta.in_adjacency_crc32c, kInIndexFile);
    if (!st) return st;
    // Same number of unique arcs both ways and every out-arc among the
    // in-arcs: the in-lists are exactly the transpose.
    if (t->adjacency.size() != m.adjacency.size())
      return Status::error(EIO, t->graph->adjacency_path().string() + ": " + std::to_string(t->adjacency.size()) +
                                    " in-arcs, but " + std::to_string(m.adjacency.size()) + " out-arcs");
    for (uint64_t u = 0; u < n; ++u)
      for (Vertex v : m.neighbours(u))
        if (!t->has_edge(v, u))
          return Status::error(EIO, t->graph->adjacency_path().string() + ": arc " + std::to_string(u) + "->" +
                                        std::to_string(v) + " missing from the in-list of " + std::to_string(v));
    return Status::ok();
  }
  for (uint64_t u = 0; u < n; ++u)
    for (Vertex v : m.neighbours(u))
      if (!m.has_edge(v, u))
        return Status::error(EIO, adj + ": vertex " + std::to_string(u) + ": edge to " + std::to_string(v) +
                                      " has no reverse edge (an undirected graph must be symmetric)");
  return Status::ok();
}

}  // namespace peregrine::graph
