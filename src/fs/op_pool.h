// OpPool: bounded free lists of data-path operation objects (ReadOp,
// WriteOp) so that, once warm, a FUSE read or write allocates nothing: no
// op, no buffer, no request array. glibc's allocator measured ~9% of the
// daemon's CPU at 4 KiB QD128, mostly because each op was allocated on a
// FUSE worker and freed on a drive thread.
//
// Two lists, by buffer size: small ops (buffer up to kSmallBytes) and large
// ones (up to kLargeBytes, a 1 MiB request with its alignment slack). Large
// buffers are kept too: a fresh one is a new mapping whose every page
// faults on first touch, and on this project's VMs those faults cost more
// than the copy (1 MiB sequential reads ran at 60-150 MiB/s on tmpfs,
// two thirds of the CPU in page faults; tools/bench/run, docs/performance.md).
// Idle buffers stay bounded: small_capacity * kSmallBytes plus
// large_capacity * kLargeBytes.
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
  static constexpr size_t kSmallBytes = 64 * 1024;
  static constexpr size_t kLargeBytes = 1024 * 1024 + 8192;

  OpPool(size_t small_capacity, size_t large_capacity) : small_(small_capacity), large_(large_capacity) {}
  ~OpPool() {
    Op* op = nullptr;
    while (small_.pop(op)) delete op;
    while (large_.pop(op)) delete op;
  }
  OpPool(const OpPool&) = delete;
  OpPool& operator=(const OpPool&) = delete;

  // An op whose buffer will hold `bytes`: from the list of its size first,
  // so that small requests do not take the large buffers.
  Op* get(size_t bytes) {
    Op* op = nullptr;
    if (bytes > kSmallBytes) {
      if (large_.pop(op) || small_.pop(op)) return op;
    } else if (small_.pop(op) || large_.pop(op)) {
      return op;
    }
    return new Op();
  }
  void put(Op* op) {
    size_t cap = op->buffer.capacity();
    bool kept = cap <= kSmallBytes ? small_.bounded_push(op) : cap <= kLargeBytes && large_.bounded_push(op);
    if (!kept) delete op;
  }

 private:
  boost::lockfree::stack<Op*> small_;
  boost::lockfree::stack<Op*> large_;
};

}  // namespace peregrine::fs
