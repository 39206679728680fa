#include "peregrine/graph/edge_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "edge_input_formats.h"

namespace peregrine::graph {

std::optional<InputFormat> parse_input_format(std::string_view name) {
  if (name == "auto") return InputFormat::kAuto;
  if (name == "text") return InputFormat::kText;
  if (name == "mm") return InputFormat::kMatrixMarket;
  if (name == "bin32") return InputFormat::kBin32;
  if (name == "bin64") return InputFormat::kBin64;
  return std::nullopt;
}

const char* input_format_name(InputFormat f) {
  switch (f) {
    case InputFormat::kAuto: return "auto";
    case InputFormat::kText: return "text";
    case InputFormat::kMatrixMarket: return "mm";
    case InputFormat::kBin32: return "bin32";
    case InputFormat::kBin64: return "bin64";
  }
  return "?";
}

Expected<std::unique_ptr<EdgeInput>> EdgeInput::open(const std::filesystem::path& path, InputFormat format) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(EINVAL, path.string() + ": not a regular file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Status::error(EINVAL, path.string() + ": empty file (no edges)");
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (format == InputFormat::kAuto) {
    static constexpr std::string_view kBanner = "%%MatrixMarket";
    char head[14] = {};
    ssize_t r = ::pread(fd, head, sizeof head, 0);
    format = r == static_cast<ssize_t>(sizeof head) && std::string_view(head, sizeof head) == kBanner
                 ? InputFormat::kMatrixMarket
                 : InputFormat::kText;
  }
  switch (format) {
    case InputFormat::kMatrixMarket: return detail::open_matrix_market_input(fd, path, size);
    case InputFormat::kBin32: return detail::open_binary_input(fd, path, size, 4);
    case InputFormat::kBin64: return detail::open_binary_input(fd, path, size, 8);
    default: return detail::open_text_input(fd, path, size);
  }
}

}  // namespace peregrine::graph
