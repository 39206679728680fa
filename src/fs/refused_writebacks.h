// RefusedWritebacks: page-cache writebacks the volume refused for want of
// space (ENOSPC, EDQUOT), to be told to the writer at its next write(2).
//
// With the page cache a write(2) only fills pages; the kernel writes them
// back later, and a refused writeback only records the error for the
// file's next fsync or close. A writer that never closes (`dd
// if=/dev/zero of=FILE`) would fill pages forever, every writeback refused,
// where ext4 fails the write(2) itself. So the daemon invalidates the
// file's attributes when it refuses one: the kernel's buffered write path
// then refreshes size and mode through a GETATTR that carries the file
// handle, and that GETATTR answers with the error, once (take()), when the
// handle is a writer's. stat(2) never carries a handle and is not touched;
// a reader's lseek(SEEK_END) or read at the end of the file carries its
// own and is answered as ever (a `tail -f` must not take the writer's
// error); a writer's lseek may meet the error instead of its write. The
// last writer's close forgets what is left: its close reported it.
//
// Thread rules: thread-safe; note() from the threads that answer WRITEs,
// take() from those that answer GETATTRs.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <unordered_map>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class RefusedWritebacks {
 public:
  // Whether `err` (positive errno) is a refusal to report this way.
  static bool for_want_of_space(int err) { return err == ENOSPC || err == EDQUOT; }
  // A writeback of `ino` was refused with `err`.
  void note(uint64_t ino, int err) EXCLUDES(mu_);
  // The refusal to report for `ino` (and forgets it), else 0.
  int take(uint64_t ino) EXCLUDES(mu_);
  // The file's last writer closed: its closes reported the error.
  void forget(uint64_t ino) EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::unordered_map<uint64_t, int> errors_ GUARDED_BY(mu_);
  // Lets take() and forget() skip the lock on every GETATTR while none waits.
  std::atomic<uint32_t> count_{0};
};

}  // namespace peregrine::fs
