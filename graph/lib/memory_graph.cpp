#include "peregrine/graph/memory_graph.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "peregrine/util/full_io.h"

namespace peregrine::graph {

bool MemoryGraph::has_edge(uint64_t u, uint64_t v) const {
  auto nb = neighbours(u);
  return std::binary_search(nb.begin(), nb.end(), static_cast<Vertex>(v));
}

Expected<MemoryGraph> load_memory_graph(const Graph& graph) {
  MemoryGraph m;
  m.graph = &graph;
  m.adjacency.resize(graph.meta.adjacency_entries);
  auto path = graph.adjacency_path();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  const size_t len = m.adjacency.size() * sizeof(Vertex);
  const ssize_t r = pread_upto(fd, m.adjacency.data(), len, 0);
  if (r < 0 || static_cast<size_t>(r) < len) {
    const int e = r < 0 ? static_cast<int>(-r) : EIO;
    ::close(fd);
    return Status::error(e, path.string() + (r < 0 ? ": read failed" : ": truncated"));
  }
  ::close(fd);
  return m;
}

}  // namespace peregrine::graph
