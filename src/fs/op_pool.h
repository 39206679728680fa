// OpPool: a bounded free list of data-path operation objects (ReadOp,
// WriteOp) so that, once warm, a FUSE read or write allocates nothing: no
// op, no buffer, no request array. glibc's allocator measured ~9% of the
// daemon's CPU at 4 KiB QD128, mostly because each op was allocated on a
// FUSE worker and freed on a drive thread.
//
// Ops whose buffer grew past kPooledBytes are freed rather than kept, so
// the pool holds at most capacity * kPooledBytes of buffers.
//
// Thread rules: get() and put() are lock-free and safe from any thread
// (FUSE workers take ops, drive threads usually return them).
#pragma once

#include <boost/lockfree/stack.hpp>
#include <cstddef>

namespace peregrine::fs {

template <typename Op>
class OpPool {
 public:
  static constexpr size_t kPooledBytes = 64 * 1024;

  explicit OpPool(size_t capacity) : free_(capacity) {}
  ~OpPool() {
    Op* op = nullptr;
    while (free_.pop(op)) delete op;
  }
  OpPool(const OpPool&) = delete;
  OpPool& operator=(const OpPool&) = delete;

  Op* get() {
    Op* op = nullptr;
    if (free_.pop(op)) return op;
    return new Op();
  }
  void put(Op* op) {
    if (op->buffer.capacity() > kPooledBytes || !free_.bounded_push(op)) delete op;
  }

 private:
  boost::lockfree::stack<Op*> free_;
};

}  // namespace peregrine::fs
