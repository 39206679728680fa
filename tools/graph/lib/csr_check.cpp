#include "peregrine/graph/csr_check.h"

#include <cerrno>
#include <cstdio>

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

}  // namespace

Status check_graph(const MemoryGraph& m) {
  const Graph& g = *m.graph;
  const std::string adj = g.adjacency_path().string();
  uint32_t icrc = crc_of(g.offsets.data(), g.offsets.size() * sizeof(uint64_t));
  if (icrc != g.meta.index_crc32c)
    return Status::error(EIO, (g.dir / kIndexFile).string() + ": checksum " + hex(icrc) + " != " +
                                  hex(g.meta.index_crc32c) + " in graph.meta");
  uint32_t acrc = crc_of(m.adjacency.data(), m.adjacency.size() * sizeof(Vertex));
  if (acrc != g.meta.adjacency_crc32c)
    return Status::error(EIO, adj + ": checksum " + hex(acrc) + " != " + hex(g.meta.adjacency_crc32c) +
                                  " in graph.meta");
  const uint64_t n = g.num_vertices();
  for (uint64_t u = 0; u < n; ++u) {
    auto nb = m.neighbours(u);
    for (size_t i = 0; i < nb.size(); ++i) {
      const uint64_t v = nb[i];
      const std::string where = adj + ": vertex " + std::to_string(u) + ": ";
      if (v >= n) return Status::error(EIO, where + "neighbour " + std::to_string(v) + " out of range");
      if (v == u) return Status::error(EIO, where + "self-loop");
      if (i > 0 && nb[i - 1] >= v) return Status::error(EIO, where + "list not strictly ascending");
      if (!m.has_edge(v, u))
        return Status::error(EIO, where + "edge to " + std::to_string(v) + " has no reverse edge");
    }
  }
  return Status::ok();
}

}  // namespace peregrine::graph
