// WriteBehind: page-cache writebacks answered before their member IO
// completes, so that closing a file (the kernel writes a file's dirty pages
// back and waits for the replies) and the kernel's background writeback do
// not wait for the drives. Only block-aligned writebacks of the writeback
// cache, while their bytes fit the budget (fuse.write_behind_mib); the
// daemon keeps its copy of the bytes until the members have them.
//
// What keeps it safe:
// - Extents are marked written only when the members have the bytes
//   (complete_write after the IO), so a crash shows zeros where an answered
//   write did not land, never stale bytes; the file's size grows then too.
// - The write holds its file's IO gate shared until it completes, and is
//   registered there as older than any read (IoGates::mark_answered): a
//   read of its bytes waits for it, truncate and hole punching wait.
// - Another write overlapping it takes the exclusive path (overlaps()).
// - fsync waits for the file's answered writes and reports their first
//   error (wait_file), as ext4 reports a failed writeback at fsync; the
//   release of a file and any unlink or rename that may free one wait
//   first, so no block is freed under IO.
// - Stat replies show the size the answered writes give (pending_end), in
//   case the kernel forgot the file meanwhile.
//
// Thread rules: thread-safe. admit() and done() are called by the writer
// and by the thread that completes the IO (a drive thread, or an fsync
// reaping it); the waits run on FUSE threads and call before_wait (hand on
// staged IO) first, and reap_here without mu_ held.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <set>
#include <unordered_map>
#include <vector>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class WriteBehind {
 public:
  // `reap_here` (may be empty) completes on the calling thread what the
  // drives have finished (Engine::reap_here); an fsync waits by calling it
  // for up to `reap_ns` before it sleeps.
  WriteBehind(uint64_t budget_bytes, std::function<void()> before_wait, std::function<void()> reap_here = {},
              uint64_t reap_ns = 0)
      : budget_(budget_bytes),
        before_wait_(std::move(before_wait)),
        reap_here_(std::move(reap_here)),
        reap_ns_(reap_ns) {}

  bool enabled() const { return budget_ != 0; }
  // No answered write in flight: the checks of every other write, stat
  // and unlink skip the lock (a snapshot; a write admitted after it is
  // after the caller's call too).
  bool idle() const { return in_flight_.load(std::memory_order_acquire) == 0; }
  // Takes the blocks [start, end) of `ino` to be answered now, of which the
  // file's bytes end at data_end (a writeback cut at the end of the file
  // fills its last block with zeros): false when they overlap a write
  // still in flight or the budget is spent.
  // An admitted write also says, in *fsynced_lately (if given), whether
  // `ino` is among the 8 files whose last fsync (note_fsync) came latest:
  // the write is then likely the start of its file's next fsync (a
  // database's commit), and the engine should not hold its IO for merging
  // (EngineConfig::hold_writes_ns).
  bool admit(uint64_t ino, uint64_t start, uint64_t end, uint64_t data_end, bool* fsynced_lately = nullptr)
      EXCLUDES(mu_);
  void note_fsync(uint64_t ino) EXCLUDES(mu_);
  // Whether an answered write of `ino` overlapping [start, end) is in flight.
  bool overlaps(uint64_t ino, uint64_t start, uint64_t end) EXCLUDES(mu_);
  // An admitted write that sent no IO after all (its prepare failed, and
  // that error was its answer).
  void withdraw(uint64_t ino, uint64_t start, uint64_t end) EXCLUDES(mu_);
  // The member IO of an admitted write finished with err (0 or -errno).
  void done(uint64_t ino, uint64_t start, uint64_t end, int err) EXCLUDES(mu_);
  // Waits for the answered writes of `ino` admitted before the call (not for
  // those a busy writer keeps adding); returns the first error one of them
  // met since the last call that took it (take_error: and forgets it, as
  // fsync reports a writeback error once), else 0. With `reap`, for a
  // caller that holds no lock an IO callback takes (fsync), the wait first
  // completes the IO itself (reap_here) rather than sleep until a drive
  // thread, woken by the member's completion, wakes it: two wake-ups of
  // an idle CPU saved on a member with latency.
  int wait_file(uint64_t ino, bool take_error, bool reap = false) EXCLUDES(mu_);
  // Waits for every answered write admitted before the call; returns the
  // first error any answered write met since the last call (the volume's
  // sync reports it once, as syncfs reports a writeback error; the file's
  // own fsync still reports it too), else 0.
  int wait_all() EXCLUDES(mu_);
  // The end of the file's bytes its furthest answered write in flight
  // carries, else 0.
  uint64_t pending_end(uint64_t ino) const EXCLUDES(mu_);
  // The bytes of the file's answered writes still in flight.
  uint64_t pending_bytes(uint64_t ino) const EXCLUDES(mu_);

  struct Counts {
    uint64_t answered = 0;       // writes answered before their IO completed
    uint64_t pending_bytes = 0;  // their bytes still in flight
    uint64_t errors = 0;         // of them, failed on the members
    uint64_t waits = 0;          // fsyncs, releases, unlinks that waited
  };
  Counts counts() EXCLUDES(mu_);

 private:
  struct Range {
    uint64_t start, end;  // blocks
    uint64_t data_end;
    uint64_t seq;  // admission order
  };
  struct File {
    std::vector<Range> pending;
    int error = 0;
  };
  // Waits, with mu_ held on entry and return, until done() holds.
  template <typename Done>
  void wait(MutexLock& lock, Done done, bool reap = false) REQUIRES(mu_);
  // The index of note_fsync's entry for `ino`, else fsynced_.size().
  size_t fsynced_index(uint64_t ino) const REQUIRES(mu_);

  const uint64_t budget_;
  const std::function<void()> before_wait_;
  const std::function<void()> reap_here_;
  const uint64_t reap_ns_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, File> files_ GUARDED_BY(mu_);
  int volume_error_ GUARDED_BY(mu_) = 0;  // for wait_all()
  std::set<uint64_t> pending_seqs_ GUARDED_BY(mu_);  // of every write in flight
  // note_fsync's last inodes, each with the count of its last call; the
  // oldest call's gives way.
  struct Fsynced {
    uint64_t ino = 0;
    uint64_t at = 0;
  };
  std::array<Fsynced, 8> fsynced_ GUARDED_BY(mu_) = {};
  uint64_t fsync_calls_ GUARDED_BY(mu_) = 0;
  uint64_t last_seq_ GUARDED_BY(mu_) = 0;
  uint64_t pending_bytes_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> in_flight_{0};  // writes admitted and not done; written under mu_
  Counts counts_ GUARDED_BY(mu_);
};

}  // namespace peregrine::fs
