// SNAP-style text edge lists, parsed by all cores: the input is read in
// batches of one piece per thread, each piece cut at a line boundary; the
// pieces are parsed at once (text_chunk.h) and their edges handed out in
// file order. Line numbers stay exact: a piece's first line is the sum of
// the line counts of the pieces before it, so the first bad line of the
// file is reported, whichever thread found it.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "edge_input_formats.h"
#include "peregrine/util/full_io.h"
#include "text_chunk.h"
#include "text_fields.h"

namespace peregrine::graph::detail {
namespace {

// 4 MiB per piece: large enough that starting a thread per piece costs
// nothing, small enough that a batch for every core stays in the caches' reach.
constexpr size_t kPieceBytes = 4 << 20;
constexpr unsigned kMaxThreads = 16;

class SnapTextInput final : public EdgeInput {
 public:
  SnapTextInput(int fd, std::filesystem::path path, uint64_t size, std::string_view prefix, unsigned threads,
                bool weighted)
      : fd_(fd), path_(std::move(path)), threads_(std::clamp(threads, 1u, kMaxThreads)) {
    file_bytes_ = size;
    format_ = InputFormat::kText;
    weighted_ = weighted;
    // A batch, plus an unfinished last line carried over from the one before.
    buf_.resize(threads_ * kPieceBytes + kMaxTextLine + 1);
    std::memcpy(buf_.data(), prefix.data(), prefix.size());
    carry_ = prefix.size();
    pieces_.resize(threads_);
  }
  ~SnapTextInput() override { ::close(fd_); }

  Expected<size_t> read(std::span<InputEdge> out, std::span<uint32_t> weights) override {
    size_t n = 0;
    while (n < out.size()) {
      if (piece_ == pieces_used_) {
        if (done_) break;
        Status st = next_batch();
        if (!st) return st;
        continue;
      }
      const auto& edges = pieces_[piece_].edges;
      const size_t k = std::min(out.size() - n, edges.size() - pos_);
      std::copy_n(edges.begin() + static_cast<ptrdiff_t>(pos_), k, out.begin() + static_cast<ptrdiff_t>(n));
      if (weighted_)
        std::copy_n(pieces_[piece_].weights.begin() + static_cast<ptrdiff_t>(pos_), k,
                    weights.begin() + static_cast<ptrdiff_t>(n));
      n += k;
      pos_ += k;
      if (pos_ == edges.size()) {
        ++piece_;
        pos_ = 0;
      }
    }
    return n;
  }

  uint64_t bytes_consumed() const override { return consumed_; }

 private:
  // Reads behind the carried bytes until the buffer is full or the input ends.
  Status fill(size_t* size) {
    size_t got = carry_;
    if (!eof_ && got < buf_.size()) {
      const ssize_t r = read_upto(fd_, buf_.data() + got, buf_.size() - got);
      if (r < 0) {
        const int e = static_cast<int>(-r);
        return Status::error(e, path_.string() + ": read failed: " + std::strerror(e));
      }
      if (static_cast<size_t>(r) < buf_.size() - got) eof_ = true;  // short only at the end
      got += static_cast<size_t>(r);
    }
    *size = got;
    return Status::ok();
  }

  Status line_error(uint64_t line, const std::string& what) const {
    return Status::error(EINVAL, path_.string() + ":" + std::to_string(line) + ": " + what);
  }

  // Reads and parses the next batch of pieces.
  Status next_batch() {
    size_t size = 0;
    Status st = fill(&size);
    if (!st) return st;
    size_t start = 0;
    if (first_) {
      first_ = false;
      if (std::string_view(buf_.data(), size).starts_with(detail::kByteOrderMark))
        start = detail::kByteOrderMark.size();
    }
    // The batch ends after its last '\n'; at the end of the input, at the end.
    size_t usable = size;
    if (!eof_) {
      const void* nl = ::memrchr(buf_.data() + start, '\n', size - start);
      if (nl == nullptr)
        return line_error(line_base_ + 1,
                          "line longer than " + std::to_string(kMaxTextLine) + " bytes (not an edge list?)");
      usable = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1;
    }
    // Cut into one piece per thread, each ending after a '\n'.
    std::vector<std::string_view> text;
    size_t from = start;
    for (unsigned i = 0; i < threads_ && from < usable; ++i) {
      size_t to = usable;
      if (i + 1 < threads_ && usable - from > kPieceBytes) {
        const size_t want = from + (usable - from) / (threads_ - i);
        const void* nl = std::memchr(buf_.data() + want, '\n', usable - want);
        to = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) + 1 : usable;
      }
      text.emplace_back(buf_.data() + from, to - from);
      from = to;
    }
    // Pieces 1.. on their own threads, piece 0 on this one.
    std::vector<std::thread> workers;
    for (size_t i = 1; i < text.size(); ++i) {
      try {
        workers.emplace_back(parse_text_chunk, text[i], weighted_, &pieces_[i]);
      } catch (const std::system_error&) {
        parse_text_chunk(text[i], weighted_, &pieces_[i]);  // no thread to be had: parse it here
      }
    }
    if (!text.empty()) parse_text_chunk(text[0], weighted_, &pieces_[0]);
    for (auto& w : workers) w.join();
    for (size_t i = 0; i < text.size(); ++i) {
      if (pieces_[i].failed) return line_error(line_base_ + pieces_[i].lines, pieces_[i].error);
      line_base_ += pieces_[i].lines;
    }
    pieces_used_ = text.size();
    piece_ = 0;
    pos_ = 0;
    consumed_ += usable;
    // Carry the unfinished last line over to the next batch.
    carry_ = size - usable;
    if (carry_ > kMaxTextLine)
      return line_error(line_base_ + 1,
                        "line longer than " + std::to_string(kMaxTextLine) + " bytes (not an edge list?)");
    std::memmove(buf_.data(), buf_.data() + usable, carry_);
    if (eof_ && carry_ == 0) done_ = true;
    return Status::ok();
  }

  int fd_;
  std::filesystem::path path_;
  unsigned threads_;
  std::vector<char> buf_;
  size_t carry_ = 0;
  bool eof_ = false;
  bool first_ = true;
  bool done_ = false;
  std::vector<TextChunk> pieces_;
  size_t pieces_used_ = 0;
  size_t piece_ = 0;  // the piece whose edges read() hands out next
  size_t pos_ = 0;
  uint64_t line_base_ = 0;  // lines before the current batch's unparsed rest
  uint64_t consumed_ = 0;
};

}  // namespace

Expected<std::unique_ptr<EdgeInput>> open_text_input(int fd, const std::filesystem::path& path, uint64_t size,
                                                     std::string_view prefix, unsigned threads, bool weighted) {
  return std::unique_ptr<EdgeInput>(new SnapTextInput(fd, path, size, prefix, threads, weighted));
}

}  // namespace peregrine::graph::detail
