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

namespace {

// The whole of `path` into `data` (exactly its size in bytes).
Status read_whole(const std::filesystem::path& path, void* data, size_t len) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  const ssize_t r = pread_upto(fd, data, len, 0);
  ::close(fd);
  if (r < 0 || static_cast<size_t>(r) < len) {
    const int e = r < 0 ? static_cast<int>(-r) : EIO;
    return Status::error(e, path.string() + (r < 0 ? ": read failed" : ": truncated"));
  }
  return Status::ok();
}

}  // namespace

Expected<MemoryGraph> load_memory_graph(const Graph& graph) {
  MemoryGraph m;
  m.graph = &graph;
  m.adjacency.resize(graph.meta.adjacency_entries);
  Status st = read_whole(graph.adjacency_path(), m.adjacency.data(), m.adjacency.size() * sizeof(Vertex));
  if (!st) return st;
  if (graph.weighted()) {
    m.weights.resize(graph.meta.adjacency_entries);
    st = read_whole(graph.weights_path(), m.weights.data(), m.weights.size() * sizeof(uint32_t));
    if (!st) return st;
  }
  return m;
}

}  // namespace peregrine::graph
