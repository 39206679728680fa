#include "peregrine/graph/edge_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "edge_input_formats.h"
#include "text_fields.h"
#include "peregrine/util/full_io.h"

namespace peregrine::graph {

std::optional<InputFormat> parse_input_format(std::string_view name) {
  if (name == "auto") return InputFormat::kAuto;
  if (name == "text") return InputFormat::kText;
  if (name == "mm") return InputFormat::kMatrixMarket;
  if (name == "gr") return InputFormat::kDimacs;
  if (name == "bin32") return InputFormat::kBin32;
  if (name == "bin64") return InputFormat::kBin64;
  return std::nullopt;
}

const char* input_format_name(InputFormat f) {
  switch (f) {
    case InputFormat::kAuto: return "auto";
    case InputFormat::kText: return "text";
    case InputFormat::kMatrixMarket: return "mm";
    case InputFormat::kDimacs: return "gr";
    case InputFormat::kBin32: return "bin32";
    case InputFormat::kBin64: return "bin64";
  }
  return "?";
}

namespace {

// Reads up to `want` bytes of a stream (fewer only at its end).
Expected<std::string> read_head(int fd, size_t want, const std::string& name) {
  std::string head(want, '\0');
  const ssize_t got = read_upto(fd, head.data(), want);
  if (got < 0) {
    const int e = static_cast<int>(-got);
    return Status::error(e, name + ": read failed: " + std::strerror(e));
  }
  head.resize(static_cast<size_t>(got));
  return head;
}

constexpr std::string_view kBanner = "%%MatrixMarket";
// The first bytes read to tell a format: a banner after a byte order mark.
constexpr size_t kSniffBytes = detail::kByteOrderMark.size() + kBanner.size();

bool blank_or_line_end(char c) { return detail::blank(c) || c == '\n'; }

// What a file's first bytes say it is (after a UTF-8 byte order mark, which
// every parser skips): Matrix Market by its banner, DIMACS by a first line
// of "c" (a comment) or "p sp" (its problem line), which no edge list starts
// with; else text.
InputFormat sniff_format(std::string_view head) {
  if (head.starts_with(detail::kByteOrderMark)) head.remove_prefix(detail::kByteOrderMark.size());
  if (head.substr(0, kBanner.size()) == kBanner) return InputFormat::kMatrixMarket;
  if (head.size() >= 2 && head[0] == 'c' && blank_or_line_end(head[1])) return InputFormat::kDimacs;
  if (head.size() >= 4 && head[0] == 'p' && blank_or_line_end(head[1]) && head.substr(2, 2) == "sp")
    return InputFormat::kDimacs;
  return InputFormat::kText;
}

}  // namespace

Expected<std::unique_ptr<EdgeInput>> EdgeInput::open(const std::filesystem::path& path, InputFormat format,
                                                     unsigned threads, bool weighted) {
  // "-" is standard input: a pipe from zcat, curl or another program.
  const bool is_stdin = path == "-";
  const std::filesystem::path name = is_stdin ? std::filesystem::path("stdin") : path;
  int fd = is_stdin ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, name.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::error(EINVAL, name.string() + ": not a file or a stream");
  }
  // A regular file has a size (progress, memory reserved for small
  // inputs); a pipe, FIFO or character device is read as a stream.
  const bool regular = S_ISREG(st.st_mode);
  const auto size = regular ? static_cast<uint64_t>(st.st_size) : 0;
  if (regular && size == 0) {
    ::close(fd);
    return Status::error(EINVAL, name.string() + ": empty file (no edges)");
  }
  const bool told_by_content = format == InputFormat::kAuto;
  std::string prefix;  // a stream's first bytes, read to tell its format
  if (regular) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (format == InputFormat::kAuto) {
      char head[kSniffBytes] = {};
      const ssize_t r = ::pread(fd, head, sizeof head, 0);
      format = sniff_format(std::string_view(head, r > 0 ? static_cast<size_t>(r) : 0));
    }
  } else {
    auto head = read_head(fd, format == InputFormat::kAuto ? kSniffBytes : 0, name.string());
    if (!head) {
      ::close(fd);
      return head.status();
    }
    prefix = std::move(*head);
    if (format == InputFormat::kAuto) format = sniff_format(prefix);
  }
  // Under auto, a file's name may say more than its bytes: GAP's *.gr and
  // *.wel. A format given by name is taken as given.
  const std::string ext = is_stdin ? std::string() : path.extension().string();
  if (told_by_content && ext == ".gr" && format == InputFormat::kText) format = InputFormat::kDimacs;
  if (told_by_content && ext == ".wel" && format == InputFormat::kText) weighted = true;
  if (weighted && (format == InputFormat::kBin32 || format == InputFormat::kBin64)) {
    ::close(fd);
    return Status::error(EINVAL, name.string() + ": a binary edge list (" + input_format_name(format) +
                                     ") holds no weights; weighted inputs are text (u v weight), Matrix Market "
                                     "'integer' or DIMACS .gr");
  }
  Expected<std::unique_ptr<EdgeInput>> in = [&]() -> Expected<std::unique_ptr<EdgeInput>> {
    switch (format) {
      case InputFormat::kMatrixMarket: return detail::open_matrix_market_input(fd, name, size, prefix, weighted);
      case InputFormat::kDimacs: return detail::open_dimacs_input(fd, name, size, prefix);
      case InputFormat::kBin32: return detail::open_binary_input(fd, name, size, 4, prefix);
      case InputFormat::kBin64: return detail::open_binary_input(fd, name, size, 8, prefix);
      default:
        return detail::open_text_input(fd, name, size, prefix,
                                       threads ? threads : std::max(1u, std::thread::hardware_concurrency()), weighted);
    }
  }();
  if (in) (*in)->size_known_ = regular;
  return in;
}

}  // namespace peregrine::graph
