// BlockingOps: a few threads for the requests a ring thread must not run
// itself because they wait for member IO or for other requests (fsync,
// fallocate, setattr, writes that are not block-aligned). A ring thread is
// the only server of its CPU's queue: while it waits, nothing else on that
// CPU is served (docs/transport.md).
//
// The queue takes a lock: these requests are rare next to reads and
// writes, and each costs far more than the lock.
//
// Thread rules: push() from ring threads; stop() from the daemon's main
// thread, once: it drops queued requests (the kernel aborts them at
// unmount), waits for running ones and joins the threads.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class BlockingOps {
 public:
  BlockingOps(unsigned threads, std::function<void(const fuse_buf&)> run);
  ~BlockingOps() { stop(); }
  BlockingOps(const BlockingOps&) = delete;
  BlockingOps& operator=(const BlockingOps&) = delete;

  void push(const fuse_buf& buf) EXCLUDES(mu_);
  void stop() EXCLUDES(mu_);

 private:
  void serve() EXCLUDES(mu_);

  std::function<void(const fuse_buf&)> run_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<fuse_buf> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace peregrine::fs
