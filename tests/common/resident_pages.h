// Which pages the kernel holds in memory (mincore(2)): of a range of this
// process's memory, or of a file's page cache. For tests of what reaches a
// page cache or is faulted in. Every test directory's tests can include it
// (tests/CMakeLists.txt puts tests/common on their include path).
// Single-threaded test code.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

namespace peregrine::test {

// Whether each 4 KiB page of [addr, addr + len) is in memory; len a
// multiple of 4 KiB. Empty when mincore fails.
inline std::vector<bool> resident_pages(const void* addr, size_t len) {
  std::vector<unsigned char> in_core(len / 4096);
  if (::mincore(const_cast<void*>(addr), len, in_core.data()) != 0) return {};
  std::vector<bool> out(in_core.size());
  for (size_t i = 0; i < in_core.size(); ++i) out[i] = (in_core[i] & 1) != 0;
  return out;
}

// Whether each page of the file at `path` is in its page cache (a shared
// read-only mapping, which faults nothing in). Empty when the file cannot
// be opened or mapped.
inline std::vector<bool> cached_file_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  std::vector<bool> out;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const size_t len = (static_cast<size_t>(st.st_size) + 4095) / 4096 * 4096;
    void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      out = resident_pages(map, len);
      ::munmap(map, len);
    }
  }
  ::close(fd);
  return out;
}

inline size_t count_true(const std::vector<bool>& v) {
  size_t n = 0;
  for (bool b : v) n += b;
  return n;
}

}  // namespace peregrine::test
