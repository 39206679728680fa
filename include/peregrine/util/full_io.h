// Whole reads and writes of a descriptor: read(2), write(2), pread(2) and
// pwrite(2) retried after EINTR and continued after a short count, so that
// a caller sees all of its bytes moved (a read: up to the end of the file)
// or an error, never a part. An error after a partial transfer reports only
// the error: the bytes already moved are not counted, and a read(2) or
// write(2) leaves the descriptor's position past them. One helper for what
// several files spelled out by hand (issue 44).
//
// Thread rules: none of their own; the descriptor's are the caller's.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace peregrine {

// Reads up to `len` bytes at `offset`, stopping early only at the end of
// the file: the bytes read, or -errno.
inline ssize_t pread_upto(int fd, void* buf, size_t len, uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// Reads up to `len` bytes at the descriptor's position, stopping early only
// at the end of the file (or stream): the bytes read, or -errno.
inline ssize_t read_upto(int fd, void* buf, size_t len) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::read(fd, p + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// Writes all `len` bytes at `offset`: 0 or -errno.
inline int pwrite_full(int fd, const void* buf, size_t len, uint64_t offset) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pwrite(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -EIO;  // no progress: never loop forever
    done += static_cast<size_t>(n);
  }
  return 0;
}

// Writes all `len` bytes at the descriptor's position: 0 or -errno.
inline int write_full(int fd, const void* buf, size_t len) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::write(fd, p + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace peregrine
