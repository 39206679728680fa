#include "peregrine/graph/memory_graph.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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
  char* p = reinterpret_cast<char*>(m.adjacency.data());
  size_t left = m.adjacency.size() * sizeof(Vertex);
  off_t off = 0;
  while (left > 0) {
    ssize_t r = ::pread(fd, p, std::min<size_t>(left, 1 << 30), off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = r < 0 ? errno : EIO;
      ::close(fd);
      return Status::error(e, path.string() + (r < 0 ? ": read failed" : ": truncated"));
    }
    p += r;
    off += r;
    left -= static_cast<size_t>(r);
  }
  ::close(fd);
  return m;
}

}  // namespace peregrine::graph
