// DataBuffer: a 4 KiB-aligned, uninitialised heap buffer for one FUSE read
// or write at a time (the engine's O_DIRECT IO needs the alignment; zeroing
// it would cost as much as the copy). It only grows, so a pooled op reuses
// its buffer for the next request of the same size or smaller.
//
// Thread rules: owned by one operation at a time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace peregrine::fs {

class DataBuffer {
 public:
  DataBuffer() = default;
  explicit DataBuffer(size_t size) { ensure(size); }
  ~DataBuffer() { std::free(data_); }
  DataBuffer(const DataBuffer&) = delete;
  DataBuffer& operator=(const DataBuffer&) = delete;

  // Makes room for `size` bytes; the contents are not kept.
  void ensure(size_t size) {
    size_t rounded = (size + 4095) / 4096 * 4096;
    if (rounded == 0) rounded = 4096;
    if (rounded <= capacity_) return;
    auto* fresh = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
    if (fresh == nullptr) throw std::bad_alloc();
    std::free(data_);
    data_ = fresh;
    capacity_ = rounded;
  }
  std::byte* data() { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace peregrine::fs
