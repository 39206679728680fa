// ReadTurn: which classic FUSE worker reads /dev/fuse next. Every worker
// blocked in read() on the shared request queue is a wake-up the kernel
// spends on the next request; with two application threads whose requests
// arrive one at a time, the workers took turns waking for one request each
// and sleeping again (docs/performance-history.md, "Classic transport: one
// reader").
//
// So, while the volume is busy, one worker at a time holds the turn and is
// the only one that sleeps in read(). It keeps the turn across requests
// that do not wait for IO (reads and writes stage theirs; metadata lives
// in memory) and lets go of it before anything that may wait for long
// (fsync, locks, an IO gate, synchronous IO, the engine's pressure point:
// EngineConfig's before_submitter_blocks), waking a waiting worker to read
// in its place. When the holder finds requests queueing (its read
// returned at once, or the volume is busy) and another is queued behind
// the one it took, it calls a waiting worker to help; a helper takes requests only while some are
// waiting, then waits for a call again.
//
// While the volume is quiet (no IO staged or on the drives: each request is
// answered by the worker that read it, as metadata requests and IO on
// memory members are) every worker sleeps in read() instead. A lone thread
// serving one application thread's requests one at a time ends up on
// another CPU than its caller, and on a machine where waking an idle CPU is
// dear (a virtual machine that halts idle vCPUs: 10 us or more each) the
// wake-up for the request and the one for the reply halved the QD 1 IOPS
// and the metadata rate; with every worker in read() one of them runs
// beside the caller (docs/transport.md). A worker that finds IO staged or
// on the drives makes the volume busy; a holder whose reads found neither
// and slept kQuietReadsToFree times in a row makes it quiet again and wakes
// the waiting workers to read. One program alone making metadata requests
// counts as busy too, until its run ends (lone_caller.h): the reader's look
// finds its requests (read_spin.h), and a worker asleep in read() would
// only be woken, in its turn, for nothing.
//
// Thread rules: shared by the session's workers. take/leave/call_help act
// for the calling thread (which turn it holds is thread-local); waiting
// workers sleep in poll() on an eventfd (then read it without blocking), a
// cancellation point at which they hold nothing, as libfuse cancels its
// workers at exit (a cancelled waiter stays counted in waiting(), which
// nothing asks after). leave_held_turn() also ends the calling thread's
// follow of a lone program (lone_caller_follow.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace peregrine::fs {

class ReadTurn {
 public:
  ReadTurn();
  ~ReadTurn();
  ReadTurn(const ReadTurn&) = delete;
  ReadTurn& operator=(const ReadTurn&) = delete;

  // False if the eventfd could not be made: then workers read as before.
  bool usable() const { return wake_fd_ >= 0; }

  // Holder reads in a row that found the volume quiet before every worker
  // reads again.
  static constexpr uint32_t kQuietReadsToFree = 8;

  // Whether only the turn's holder sleeps in read() (the volume is busy).
  bool busy() const { return busy_.load(); }
  // A worker found IO staged or on the drives.
  void note_busy() {
    if (!io_busy_.load(std::memory_order_relaxed)) io_busy_.store(true);
    if (!busy_.load(std::memory_order_relaxed)) busy_.store(true);
  }
  // One program alone makes metadata requests (lone_caller.h): one reader
  // too, until free_if_only_lone().
  void note_lone_program() {
    if (!busy_.load(std::memory_order_relaxed)) busy_.store(true);
  }
  // The holder, once the lone program's run ended: if nothing but that
  // run made the volume busy, it is quiet again at once (every waiting
  // worker is woken to read) and true is returned. Several callers are
  // better served by every worker reading than by the kQuietReadsToFree
  // slept reads they may never give.
  bool free_if_only_lone();
  // The holder, after a read: `quiet` if it started with no IO staged or
  // on the drives and had to sleep. Returns true if that made the volume
  // quiet: the turn is then let go of and every waiting worker woken.
  bool note_holder_read(bool quiet);

  bool held_here() const;
  // Takes the turn for the calling thread if no worker holds it.
  bool try_take();
  // The calling thread lets go of the turn, if it holds it, and wakes a
  // waiting worker to read instead.
  void leave();
  // The holder, about to work on a request: if another request waits on
  // `fd` and a worker is waiting, wake one to help.
  void call_help(int fd);
  // A worker without the turn, having found no request waiting: sleeps
  // until the turn is let go of, help is called or the volume is quiet
  // (`quiet`: read as every worker does).
  // With timeout_ms >= 0 it returns timed_out after that long unwoken.
  enum class Woken { took_turn, to_help, quiet, by_signal, timed_out };
  Woken wait(int timeout_ms = -1);
  // Wakes one waiting worker, if any, to look at the queue and wait again.
  void nudge() {
    if (waiting_.load() != 0) wake_one();
  }

  // Lets go of whatever turn the calling thread holds: before it waits for
  // something a drive or another thread must finish.
  static void leave_held_turn();

  // For tests and statistics.
  uint32_t waiting() const { return waiting_.load(); }
  uint64_t helps_called() const { return helps_.load(std::memory_order_relaxed); }

 private:
  // busy_ off, the turn let go of, every waiting worker woken.
  void go_quiet();
  void wake_one();
  void wake(uint64_t n);

  std::atomic<bool> busy_{false};
  std::atomic<bool> io_busy_{false};  // busy_ came from IO (note_busy) since the volume was last quiet
  std::atomic<uint32_t> quiet_reads_{0};  // the holder's (relaxed: one holder at a time)
  std::atomic<bool> taken_{false};
  std::atomic<uint32_t> waiting_{0};
  std::atomic<uint64_t> helps_{0};
  int wake_fd_ = -1;
};

}  // namespace peregrine::fs
