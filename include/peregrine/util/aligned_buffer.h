// AlignedBuffer: the project's one heap buffer aligned for O_DIRECT (4 KiB
// by default). Made zero-filled, or uninitialised where the caller fills it
// at once and zeroing would cost as much as the copy (a FUSE read's or
// write's data). reserve() only grows, so a pooled operation reuses its
// buffer for the next request of the same size or smaller.
//
// Thread rules: owned by one thread at a time; moving transfers ownership.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>

namespace peregrine {

class AlignedBuffer {
 public:
  enum class Fill { kZeros, kUninitialised };

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size, size_t alignment = 4096, Fill fill = Fill::kZeros) : alignment_(alignment) {
    reserve(size);
    size_ = size;
    if (fill == Fill::kZeros) std::memset(data_, 0, capacity_);
  }
  static AlignedBuffer uninitialised(size_t size, size_t alignment = 4096) {
    return AlignedBuffer(size, alignment, Fill::kUninitialised);
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept { take(o); }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      take(o);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  // Makes room for at least `size` bytes, rounded up to the alignment, and
  // sets size() to it. The contents are not kept when it grows, and new
  // room is not zeroed: for a buffer the caller fills before it reads.
  void reserve(size_t size) {
    size_t rounded = (size + alignment_ - 1) / alignment_ * alignment_;
    if (rounded == 0) rounded = alignment_;
    if (rounded > capacity_) {
      auto* fresh = static_cast<std::byte*>(std::aligned_alloc(alignment_, rounded));
      if (fresh == nullptr) throw std::bad_alloc();
      std::free(data_);
      data_ = fresh;
      capacity_ = rounded;
    }
    size_ = size;
  }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::span<std::byte> span() { return {data_, size_}; }
  std::span<const std::byte> span() const { return {data_, size_}; }

 private:
  void take(AlignedBuffer& o) {
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    alignment_ = o.alignment_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.capacity_ = 0;
  }

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t alignment_ = 4096;
};

}  // namespace peregrine
