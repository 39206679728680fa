// Reads a file line by line through a large buffer, for the text edge-list
// parsers: lines are views into the buffer (valid until the next call), the
// line number and the bytes consumed are kept for messages and progress.
// '\n' ends a line; a '\r' before it stays in the line (the parsers treat
// it as blank space). A UTF-8 byte order mark before the first line is
// skipped.
// Thread rules: owned by one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph {

class LineReader {
 public:
  static constexpr size_t kMaxLine = 1 << 20;

  // Takes ownership of fd. `prefix`: bytes already read from fd (a pipe's
  // first bytes, read to tell its format), returned before fd's.
  LineReader(int fd, std::filesystem::path path, std::string_view prefix = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line (without its '\n') and returns true, or
  // returns false at end of file. Errors: read failure, a line > kMaxLine.
  Expected<bool> next(std::string_view* line);

  uint64_t line_number() const { return line_no_; }  // of the line last returned
  uint64_t bytes_consumed() const { return consumed_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  Status fill();

  int fd_;
  std::filesystem::path path_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  uint64_t line_no_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace peregrine::graph
