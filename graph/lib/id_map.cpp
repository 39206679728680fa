#include "peregrine/graph/id_map.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "peregrine/util/full_io.h"

namespace peregrine::graph {

IdMap IdMap::sorted(std::vector<uint64_t> ids, uint64_t table_budget_bytes) {
  IdMap m(ids.size(), ids.empty() ? 0 : ids.front());
  if (ids.empty() || ids.back() - ids.front() == ids.size() - 1) return m;  // contiguous: no table needed
  const uint64_t last = ids.back() - ids.front();  // the span minus 1: 0..2^64-1 would overflow the span
  // A vertex id must fit the table's uint32 entries: n <= 2^32 - 1 here.
  if (last < table_budget_bytes / sizeof(uint32_t) && ids.size() < kNone) {
    m.table_.assign(last + 1, kNone);
    for (uint64_t v = 0; v < ids.size(); ++v) m.table_[ids[v] - m.base_] = static_cast<uint32_t>(v);
  } else if (ids.size() < kNone) {
    // About one bucket per id: 2^k buckets over the bits of `last`; fewer
    // (a few ids each, still one or two cache lines to search) if that
    // does not fit the budget.
    const unsigned bits = static_cast<unsigned>(std::bit_width(last));
    unsigned k = std::min(bits, static_cast<unsigned>(std::bit_width(ids.size())));
    while (k > 0 && ((1ULL << k) + 1) * sizeof(uint32_t) > table_budget_bytes) --k;
    const uint64_t buckets = 1ULL << k;
    if (k > 0) {
      m.bucket_shift_ = bits - k;
      m.buckets_.assign(buckets + 1, 0);
      // buckets_[b] = index of the first id in bucket b or later.
      uint64_t v = 0;
      for (uint64_t b = 0; b <= buckets; ++b) {
        while (v < ids.size() && ((ids[v] - m.base_) >> m.bucket_shift_) < b) ++v;
        m.buckets_[b] = static_cast<uint32_t>(v);
      }
    }
  }
  m.ids_ = std::move(ids);
  return m;
}

std::optional<Vertex> IdMap::find(uint64_t user) const {
  if (n_ == 0 || user < base_) return std::nullopt;
  if (ids_.empty()) {
    if (user - base_ >= n_) return std::nullopt;
    return static_cast<Vertex>(user - base_);
  }
  if (!table_.empty()) {
    if (user - base_ >= table_.size() || table_[user - base_] == kNone) return std::nullopt;
    return table_[user - base_];
  }
  auto first = ids_.begin(), last = ids_.end();
  if (!buckets_.empty()) {
    const uint64_t b = (user - base_) >> bucket_shift_;
    if (b + 1 >= buckets_.size()) return std::nullopt;
    first = ids_.begin() + buckets_[b];
    last = ids_.begin() + buckets_[b + 1];
  }
  auto it = std::lower_bound(first, last, user);
  if (it == ids_.end() || *it != user) return std::nullopt;
  return static_cast<Vertex>(it - ids_.begin());
}

Expected<uint64_t> read_user_id(const Graph& graph, uint64_t v) {
  if (!graph.meta.has_id_map) return v;
  auto path = graph.dir / kIdMapFile;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  uint64_t id = 0;
  ssize_t r = ::pread(fd, &id, sizeof id, static_cast<off_t>(v * sizeof id));
  int e = errno;
  ::close(fd);
  if (r != static_cast<ssize_t>(sizeof id))
    return Status::error(r < 0 ? e : EIO, path.string() + ": cannot read the id of vertex " + std::to_string(v));
  return id;
}

Expected<IdMap> IdMap::load(const Graph& graph) {
  const uint64_t n = graph.num_vertices();
  if (!graph.meta.has_id_map) return identity(n);
  auto path = graph.dir / kIdMapFile;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  std::vector<uint64_t> ids(n);
  const size_t len = n * sizeof(uint64_t);
  const ssize_t r = pread_upto(fd, ids.data(), len, 0);
  if (r < 0 || static_cast<size_t>(r) < len) {
    const int e = r < 0 ? static_cast<int>(-r) : EIO;
    ::close(fd);
    return Status::error(
        e, path.string() + (r < 0 ? ": read failed" : ": truncated: expected " + std::to_string(n * 8) + " bytes"));
  }
  char extra;
  ssize_t more = ::pread(fd, &extra, 1, static_cast<off_t>(len));
  ::close(fd);
  if (more > 0) return Status::error(EIO, path.string() + ": too long: expected " + std::to_string(n * 8) + " bytes");
  for (uint64_t v = 1; v < n; ++v)
    if (ids[v] <= ids[v - 1])
      return Status::error(EIO, path.string() + ": corrupt: ids not strictly ascending at vertex " + std::to_string(v));
  return sorted(std::move(ids));
}

}  // namespace peregrine::graph
