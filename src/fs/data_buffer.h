// DataBuffer: a 4 KiB-aligned, uninitialised heap buffer for one FUSE read
// or write (the engine's O_DIRECT IO needs the alignment; zeroing it would
// cost as much as the copy). Owned by one operation; freed with it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace peregrine::fs {

class DataBuffer {
 public:
  explicit DataBuffer(size_t size) {
    size_t rounded = (size + 4095) / 4096 * 4096;
    data_ = static_cast<std::byte*>(std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~DataBuffer() { std::free(data_); }
  DataBuffer(const DataBuffer&) = delete;
  DataBuffer& operator=(const DataBuffer&) = delete;
  std::byte* data() { return data_; }

 private:
  std::byte* data_ = nullptr;
};

}  // namespace peregrine::fs
