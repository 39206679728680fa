// RequestSlots: the engine requests of one FUSE read or write, one per
// volume extent it touches. Most touch one or two extents, so a few slots
// live inside the op and only a fragmented range allocates more (at most
// one per 4 KiB block of a 1 MiB request, and kept for the op's next use).
//
// Thread rules: owned by one operation at a time.
#pragma once

#include <cstddef>
#include <memory>

#include "peregrine/engine/request.h"

namespace peregrine::fs {

class RequestSlots {
 public:
  // Room for `n` requests; earlier ones are not kept.
  void ensure(size_t n) {
    if (n <= kInline || n <= spilled_count_) return;
    spilled_ = std::make_unique<Request[]>(n);
    spilled_count_ = n;
  }
  Request& operator[](size_t i) { return spilled_ ? spilled_[i] : inline_[i]; }

 private:
  static constexpr size_t kInline = 4;
  Request inline_[kInline];
  std::unique_ptr<Request[]> spilled_;
  size_t spilled_count_ = 0;
};

}  // namespace peregrine::fs
