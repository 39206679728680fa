// bin32 / bin64 edge lists: little-endian (u, v) pairs of uint32 or uint64.
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "edge_input_formats.h"
#include "peregrine/util/full_io.h"

namespace peregrine::graph::detail {
namespace {

class BinaryInput final : public EdgeInput {
 public:
  BinaryInput(int fd, std::filesystem::path path, uint64_t size, unsigned id_bytes, std::string_view prefix)
      : fd_(fd), path_(std::move(path)), id_bytes_(id_bytes), buf_(1 << 22), prefix_(prefix) {
    file_bytes_ = size;
    format_ = id_bytes == 4 ? InputFormat::kBin32 : InputFormat::kBin64;
  }
  ~BinaryInput() override { ::close(fd_); }

  Expected<size_t> read(std::span<InputEdge> out, std::span<uint32_t>) override {
    const size_t pair = 2 * id_bytes_;
    const size_t want = std::min(out.size(), buf_.size() / pair) * pair;
    size_t got = std::min(want, prefix_.size() - prefix_pos_);
    std::memcpy(buf_.data(), prefix_.data() + prefix_pos_, got);
    prefix_pos_ += got;
    const ssize_t r = read_upto(fd_, buf_.data() + got, want - got);
    if (r < 0) {
      const int e = static_cast<int>(-r);
      return Status::error(e, path_.string() + ": read failed: " + std::strerror(e));
    }
    got += static_cast<size_t>(r);
    if (got % pair != 0)
      return Status::error(EINVAL, path_.string() + ": " + std::to_string(consumed_ + got) +
                                       " bytes is not a whole number of " + std::to_string(pair) + "-byte pairs (" +
                                       input_format_name(format_) + "): truncated, or the wrong --format?");
    const size_t n = got / pair;
    for (size_t i = 0; i < n; ++i) {
      const char* p = buf_.data() + i * pair;
      if (id_bytes_ == 4) {
        uint32_t a, b;
        std::memcpy(&a, p, 4);
        std::memcpy(&b, p + 4, 4);
        out[i] = {a, b};
      } else {
        std::memcpy(&out[i].u, p, 8);
        std::memcpy(&out[i].v, p + 8, 8);
      }
    }
    consumed_ += got;
    return n;
  }

  uint64_t bytes_consumed() const override { return consumed_; }

 private:
  int fd_;
  std::filesystem::path path_;
  unsigned id_bytes_;
  std::vector<char> buf_;
  std::string prefix_;  // a stream's first bytes, read to tell its format
  size_t prefix_pos_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace

Expected<std::unique_ptr<EdgeInput>> open_binary_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                       unsigned id_bytes, std::string_view prefix) {
  static_assert(std::endian::native == std::endian::little, "binary edge lists are read as little-endian");
  const uint64_t pair = 2ULL * id_bytes;
  if (size % pair != 0) {
    ::close(fd);
    return Status::error(EINVAL, path.string() + ": " + std::to_string(size) + " bytes is not a whole number of " +
                                     std::to_string(pair) + "-byte pairs (" + (id_bytes == 4 ? "bin32" : "bin64") +
                                     "): truncated, or the wrong --format?");
  }
  return std::unique_ptr<EdgeInput>(new BinaryInput(fd, path, size, id_bytes, prefix));
}

}  // namespace peregrine::graph::detail
