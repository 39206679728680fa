// StopSignalWaker: makes sure SIGTERM, SIGINT and SIGHUP end libfuse's
// session loop.
//
// Why: libfuse's handler for those signals marks the session exited, and
// its loop sees that only when the wait of the thread running the loop is
// interrupted, or when a worker's read of /dev/fuse returns. A signal that
// another thread takes (drive, journal and ring threads do not block
// these signals; libfuse's workers do), or that the loop's thread takes
// between its check and its wait, does neither: with no request coming
// the daemon served on. Seen twice in a day of test runs, in
// UnmountTest.SigtermUnmountsCleanly: the daemon was alive 60 s after its
// SIGTERM, with its loop's thread in sem_wait, and a second SIGTERM ended
// it at once.
//
// How: while it lives, libfuse's handlers are chained behind one that also
// writes to an eventfd. A watcher thread, woken by it, interrupts the
// loop's thread with SIGUSR1 (a handler that does nothing, installed
// without SA_RESTART so that the loop's sem_wait returns) every 10 ms
// until the loop has returned. Nothing polls
// before a signal comes.
//
// Thread rules: construct it on the thread that then runs the loop, after
// fuse_set_signal_handlers(); destroy it on that thread once the loop has
// returned, before fuse_remove_signal_handlers(). One at a time per
// process (a signal handler reaches it through a global).
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <thread>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class StopSignalWaker {
 public:
  StopSignalWaker();
  ~StopSignalWaker();
  StopSignalWaker(const StopSignalWaker&) = delete;
  StopSignalWaker& operator=(const StopSignalWaker&) = delete;

 private:
  void watch() EXCLUDES(mu_);

  const pthread_t loop_thread_;
  int event_fd_ = -1;
  Mutex mu_;
  std::condition_variable cv_;
  bool loop_returned_ GUARDED_BY(mu_) = false;
  std::thread watcher_;
};

}  // namespace peregrine::fs
