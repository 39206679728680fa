#include "peregrine/graph/file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "peregrine/util/crc32c.h"
#include "peregrine/util/full_io.h"

namespace peregrine::graph {

Expected<FileWriter> FileWriter::create(const std::filesystem::path& path, size_t buffer_bytes, bool checksum) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error(errno, path.string() + ": cannot create: " + std::strerror(errno));
  return FileWriter(fd, path, buffer_bytes, checksum);
}

FileWriter::FileWriter(int fd, std::filesystem::path path, size_t buffer_bytes, bool checksum)
    : fd_(fd), path_(std::move(path)), buf_(buffer_bytes), checksum_(checksum) {}

FileWriter::FileWriter(FileWriter&& o) noexcept
    : fd_(o.fd_),
      path_(std::move(o.path_)),
      buf_(std::move(o.buf_)),
      used_(o.used_),
      checksum_(o.checksum_),
      crc_(o.crc_),
      bytes_(o.bytes_) {
  o.fd_ = -1;
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileWriter::flush() {
  if (int rc = write_full(fd_, buf_.data(), used_); rc < 0)
    return Status::error(-rc, path_.string() + ": write failed: " + std::strerror(-rc));
  used_ = 0;
  return Status::ok();
}

Status FileWriter::append_slow(const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  if (checksum_) crc_ = crc32c(p, len, crc_);
  bytes_ += len;
  while (len > 0) {
    size_t n = std::min(len, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, n);
    used_ += n;
    p += n;
    len -= n;
    if (used_ == buf_.size()) {
      Status st = flush();
      if (!st) return st;
    }
  }
  return Status::ok();
}

Status FileWriter::finish(bool sync) {
  Status st = flush();
  if (!st) return st;
  if (sync && ::fsync(fd_) != 0)
    return Status::error(errno, path_.string() + ": fsync failed: " + std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return Status::error(errno, path_.string() + ": close failed: " + std::strerror(errno));
  return Status::ok();
}

}  // namespace peregrine::graph
