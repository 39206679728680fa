#include "peregrine/graph/line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text_fields.h"

namespace peregrine::graph {

LineReader::LineReader(int fd, std::filesystem::path path, std::string_view prefix)
    : fd_(fd), path_(std::move(path)), buf_(4 * kMaxLine) {
  std::memcpy(buf_.data(), prefix.data(), prefix.size());
  end_ = prefix.size();
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineReader::fill() {
  // Keep the unfinished line, move it to the front, read behind it.
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
  while (!eof_ && end_ < buf_.size()) {
    ssize_t r = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::error(errno, path_.string() + ": read failed: " + std::strerror(errno));
    }
    if (r == 0) {
      eof_ = true;
      break;
    }
    end_ += static_cast<size_t>(r);
  }
  return Status::ok();
}

Expected<bool> LineReader::next(std::string_view* line) {
  const char* nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
  if (nl == nullptr && !eof_) {
    Status st = fill();
    if (!st) return st;
    nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
  }
  size_t len;
  if (nl != nullptr) {
    len = static_cast<size_t>(nl - (buf_.data() + pos_));
  } else if (end_ > pos_ && eof_) {
    len = end_ - pos_;  // last line without '\n'
  } else if (end_ == pos_) {
    return false;
  } else {
    len = end_ - pos_;
  }
  ++line_no_;
  // A UTF-8 byte order mark, as editors on Windows write, is not part of
  // the first line (the text parser skips it too).
  const size_t mark = detail::kByteOrderMark.size();
  if (line_no_ == 1 && std::string_view(buf_.data() + pos_, len).starts_with(detail::kByteOrderMark)) {
    pos_ += mark;
    consumed_ += mark;
    len -= mark;
  }
  if (len > kMaxLine)
    return Status::error(EINVAL, path_.string() + ":" + std::to_string(line_no_) + ": line longer than " +
                                     std::to_string(kMaxLine) + " bytes (not an edge list?)");
  *line = std::string_view(buf_.data() + pos_, len);
  const size_t step = nl != nullptr ? len + 1 : len;
  pos_ += step;
  consumed_ += step;
  return true;
}

}  // namespace peregrine::graph
