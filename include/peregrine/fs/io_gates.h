// IoGates: per-inode admission for data IO. Reads and block-aligned writes
// enter shared (many at once, on one file too); truncate, hole punching and
// sub-block read-modify-write enter exclusive, after every shared holder
// has finished. This keeps a block from being freed and reused while IO to
// it is in flight, and keeps two partial writes to one block from losing
// each other's bytes.
//
// Inodes hash onto a fixed set of stripes; inodes that share a stripe share
// a gate, which only costs some waiting. Writers waiting for exclusive entry
// hold off new shared entries, so truncate cannot starve.
//
// A thread that must wait first runs the before_wait hook, without any gate
// held: a FUSE worker may still hold staged IO of its own that holds a gate
// shared (fuse.batch_requests), and must hand it on or wait on itself.
//
// Thread rules: thread-safe. unlock_shared() may run on another thread than
// lock_shared() (a drive thread finishing the IO). before_wait runs on the
// thread that is about to wait. A gate is a lock chosen by inode number at
// run time, which the thread-safety analysis cannot name: "REQUIRES:
// exclusive gate" elsewhere stays a comment; each gate's own mutex is
// annotated.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class IoGates {
 public:
  explicit IoGates(std::function<void()> before_wait = {}) : before_wait_(std::move(before_wait)) {}

  void lock_shared(uint64_t ino);
  void unlock_shared(uint64_t ino);
  void lock_exclusive(uint64_t ino);
  void unlock_exclusive(uint64_t ino);

 private:
  static constexpr int kStripes = 256;
  struct Gate {
    Mutex mu;
    std::condition_variable cv;
    uint32_t shared GUARDED_BY(mu) = 0;
    bool exclusive GUARDED_BY(mu) = false;
    uint32_t exclusive_waiting GUARDED_BY(mu) = 0;
  };
  Gate& gate(uint64_t ino) { return gates_[ino % kStripes]; }
  // Returns once may_enter() (called with g.mu held) is true.
  template <typename MayEnter>
  void wait(Gate& g, MutexLock& lock, MayEnter may_enter) REQUIRES(g.mu);

  const std::function<void()> before_wait_;
  Gate gates_[kStripes];
};

// Holds a gate exclusively for a scope.
class ExclusiveGate {
 public:
  ExclusiveGate(IoGates& g, uint64_t ino) : g_(g), ino_(ino) { g_.lock_exclusive(ino_); }
  ~ExclusiveGate() { g_.unlock_exclusive(ino_); }
  ExclusiveGate(const ExclusiveGate&) = delete;
  ExclusiveGate& operator=(const ExclusiveGate&) = delete;

 private:
  IoGates& g_;
  uint64_t ino_;
};

}  // namespace peregrine::fs
