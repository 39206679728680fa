// Internal to import: reads back the scratch file of raw (u64, u64) pairs
// that the parse pass appended, in batches.
// Thread rules: owned by one thread.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "peregrine/graph/edge_input.h"
#include "peregrine/util/full_io.h"
#include "peregrine/util/result.h"

namespace peregrine::graph::detail {

// Sequential reader of the scratch file of raw pairs.
class RawEdges {
 public:
  static Expected<RawEdges> open(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
    return RawEdges(fd, path);
  }
  RawEdges(RawEdges&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  RawEdges(const RawEdges&) = delete;
  ~RawEdges() {
    if (fd_ >= 0) ::close(fd_);
  }
  Expected<size_t> read(std::vector<InputEdge>& buf) {
    const ssize_t r = read_upto(fd_, buf.data(), buf.size() * sizeof(InputEdge));
    if (r < 0) {
      const int e = static_cast<int>(-r);
      return Status::error(e, path_.string() + ": read failed: " + std::strerror(e));
    }
    const auto got = static_cast<size_t>(r);
    if (got % sizeof(InputEdge) != 0) return Status::error(EIO, path_.string() + ": scratch file truncated");
    return got / sizeof(InputEdge);
  }

 private:
  RawEdges(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::filesystem::path path_;
};

}  // namespace peregrine::graph::detail
