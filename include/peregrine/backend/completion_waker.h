// CompletionWaker: where a drive thread sleeps when none of its drives has
// work. One eventfd carries every reason to wake: each member ring the
// thread serves signals it on every completion (io_uring_register_eventfd),
// and submitters write it when they queue IO. A small io_uring of the
// waker's own keeps a read posted on the eventfd, so that a single
// io_uring_enter waits for it with a precise timeout (a shaped member's
// next modelled completion) — no timer SQE and no timer slack.
//
// Why one waker for several drives: when drives outnumber CPUs, a thread
// per drive sleeps and wakes once per completion; a thread serving several
// drives finds their completions together and sleeps less (docs/engine.md,
// "Path of one request", step 3).
//
// Thread rules: sleep() only on the owning drive thread; wake() and fd()
// from any thread.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>

#include "peregrine/util/result.h"

namespace peregrine {

class CompletionWaker {
 public:
  static Expected<std::unique_ptr<CompletionWaker>> create();
  ~CompletionWaker();
  CompletionWaker(const CompletionWaker&) = delete;
  CompletionWaker& operator=(const CompletionWaker&) = delete;

  // The eventfd member rings register (io_uring_register_eventfd).
  int fd() const { return event_fd_; }
  // Ends the current or next sleep().
  void wake();
  // Blocks until the eventfd is signalled or CLOCK_MONOTONIC reaches
  // `deadline_ns` (0 = no deadline). May return early; callers re-check.
  void sleep(uint64_t deadline_ns);

 private:
  CompletionWaker() = default;

  io_uring ring_{};
  bool ring_ready_ = false;
  int event_fd_ = -1;
  bool read_posted_ = false;
  uint64_t value_ = 0;  // target of the posted read
};

}  // namespace peregrine
