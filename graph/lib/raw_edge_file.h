// Internal to import: reads back the scratch file of raw (u64, u64) pairs
// that the parse pass appended (and of a weighted input's uint32 weights,
// beside it), in batches.
// Thread rules: owned by one thread.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include "peregrine/graph/edge_input.h"
#include "peregrine/util/full_io.h"
#include "peregrine/util/result.h"

namespace peregrine::graph::detail {

// Sequential reader of a scratch file of raw records.
template <class Record>
class RawRecords {
 public:
  static Expected<RawRecords> open(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
    return RawRecords(fd, path);
  }
  RawRecords(RawRecords&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  RawRecords(const RawRecords&) = delete;
  ~RawRecords() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Fills the front of buf (up to `count` records, all of it by default).
  Expected<size_t> read(std::vector<Record>& buf, size_t count = SIZE_MAX) {
    const ssize_t r = read_upto(fd_, buf.data(), std::min(count, buf.size()) * sizeof(Record));
    if (r < 0) {
      const int e = static_cast<int>(-r);
      return Status::error(e, path_.string() + ": read failed: " + std::strerror(e));
    }
    const auto got = static_cast<size_t>(r);
    if (got % sizeof(Record) != 0) return Status::error(EIO, path_.string() + ": scratch file truncated");
    return got / sizeof(Record);
  }

 private:
  RawRecords(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::filesystem::path path_;
};

using RawEdges = RawRecords<InputEdge>;
using RawWeights = RawRecords<uint32_t>;

}  // namespace peregrine::graph::detail
