// Sequential output file for the generator: appends through a user-space
// buffer, keeps a running CRC32C and a byte count, and fsyncs on finish() so
// that a graph reported as written is on stable storage (on a peregrine
// mount as much as on a local disk).
// Thread rules: move-only, owned by one thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph {

class FileWriter {
 public:
  // checksum = false skips the CRC (scratch files nobody verifies).
  static Expected<FileWriter> create(const std::filesystem::path& path, size_t buffer_bytes = 1 << 20,
                                     bool checksum = true);
  FileWriter(FileWriter&& o) noexcept;
  FileWriter& operator=(FileWriter&&) = delete;
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  ~FileWriter();

  Status append(const void* data, size_t len) {
    // Inline for the many small appends of import's scratch records.
    if (!checksum_ && len <= buf_.size() - used_) {
      std::memcpy(buf_.data() + used_, data, len);
      used_ += len;
      bytes_ += len;
      return Status::ok();
    }
    return append_slow(data, len);
  }
  // Flushes, fsyncs (unless !sync: scratch files that die with the run)
  // and closes. REQUIRES: called once, before destruction to keep the data.
  Status finish(bool sync = true);

  uint32_t crc() const { return crc_; }
  uint64_t bytes() const { return bytes_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  FileWriter(int fd, std::filesystem::path path, size_t buffer_bytes, bool checksum);
  Status flush();
  Status append_slow(const void* data, size_t len);

  int fd_ = -1;
  std::filesystem::path path_;
  std::vector<char> buf_;
  size_t used_ = 0;
  bool checksum_ = true;
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace peregrine::graph
