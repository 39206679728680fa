#include "id_slices.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "peregrine/util/full_io.h"

namespace peregrine::graph::detail {

Expected<std::vector<uint64_t>> read_ids(const std::filesystem::path& ids_file, uint64_t first, uint64_t count) {
  int fd = ::open(ids_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, ids_file.string() + ": cannot open: " + std::strerror(errno));
  std::vector<uint64_t> ids(count);
  const size_t len = count * sizeof(uint64_t);
  const ssize_t r = pread_upto(fd, ids.data(), len, first * sizeof(uint64_t));
  if (r < 0 || static_cast<size_t>(r) < len) {
    const int e = r < 0 ? static_cast<int>(-r) : EIO;
    ::close(fd);
    return Status::error(e, ids_file.string() + (r < 0 ? ": read failed: " + std::string(std::strerror(e))
                                                       : std::string(": truncated")));
  }
  ::close(fd);
  return ids;
}

Expected<IdSlices> IdSlices::open(const std::filesystem::path& ids_file, uint64_t n, uint64_t slice_ids) {
  IdSlices s;
  s.path_ = ids_file;
  s.n_ = n;
  s.slice_ids_ = std::max<uint64_t>(1, slice_ids);
  for (uint64_t v = 0; v < n; v += s.slice_ids_) {
    auto id = read_ids(ids_file, v, 1);
    if (!id) return id.status();
    s.first_ids_.push_back((*id)[0]);
  }
  return s;
}

size_t IdSlices::part_of(uint64_t id) const {
  auto it = std::upper_bound(first_ids_.begin(), first_ids_.end(), id);
  return it == first_ids_.begin() ? 0 : static_cast<size_t>(it - first_ids_.begin()) - 1;
}

Expected<std::vector<uint64_t>> IdSlices::read(size_t p) const { return read_ids(path_, first_vertex(p), count(p)); }

}  // namespace peregrine::graph::detail
