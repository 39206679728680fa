// LoneCallerFollow: the classic reader of a lone program's requests
// (lone_caller.h) holds itself to the CPU that program runs on, at
// SCHED_IDLE, so that each request and each reply is a switch between two
// threads on one CPU instead of a wake-up of the other CPU.
//
// Why: the one reader runs on whichever CPU it last slept on. The
// program's request wakes it there, and its reply wakes the program on the
// program's own CPU, which has gone idle meanwhile: two idle CPUs woken
// per request, on a virtual machine each a halted vCPU (10 us or more).
// Held to the program's CPU, the reader is woken where the program is
// about to sleep. At SCHED_IDLE that CPU still counts as idle to the
// scheduler when the reply wakes the program, which is then woken there
// and preempts the reader at once; at its own policy the reader would make
// the CPU busy and the program would be woken on the other one. The reader
// stays lowered for the whole run: lowering it per reply, as the rings do
// (reply_yield.h), costs two sched_setscheduler() calls, 3.3-3.8 us on
// the AMD EPYC guest, as much as the wake-up it saves. Measured there
// (docs/transport.md, "classic, one program alone"): one thread's
// getxattr() calls 67-80K a second against 52-55K, and find, du and
// ls -lR of /usr/include after a dropped cache 2.33-2.40 s against
// 3.30-3.60.
//
// The cost: while the program runs, the lowered reader waits for the CPU,
// and so does any other program's request it was woken for. A waiting
// worker looks out for that every LoneCaller::kStalledNs: seeing a request
// waiting at two of its looks with no read between (follower_stalled), it
// puts the reader back and serves the request itself. libfuse starts new
// workers from a worker, which inherit its CPU and policy:
// undo_inherited() puts a new worker back before its first read.
//
// The CPU is checked at most every kCheckNs (/proc/<tid>/stat); the program
// moving between checks costs a wake-up per request until the next one.
// The follow ends with the run (a read or write, a second caller, a
// request that may wait long), when the worker lets go of the turn
// mid-request, and when the look-out finds it idle (LoneCaller::kIdleNs
// without a request: the program ended or stopped asking) and puts the
// thread back; a stop by the look-out is seen at the next follow()
// (LoneCaller::stops()).
//
// Thread rules: one per worker (RequestReader's), used by that worker;
// restore_thread(), undo_inherited() and release_on_this_thread() from any
// worker.
#pragma once

#include <cstdint>

#include "peregrine/fs/caller_cpu.h"
#include "peregrine/fs/lone_caller.h"

namespace peregrine::fs {

class LoneCallerFollow {
 public:
  static constexpr uint64_t kCheckNs = 1'000'000;

  // The turn's holder read a request of the lone program's thread `tid`
  // at now_ns: holds this thread to that thread's CPU, lowered, if
  // `lone` lets it follow; else lets go.
  void follow(uint32_t tid, uint64_t now_ns, LoneCaller& lone);
  // Back to the worker's own policy and the process's CPUs, if held. If
  // the policy cannot be put back, following is turned off and the thread
  // stays held until a later call succeeds.
  void release();
  bool holding() const { return holding_; }
  // The calling thread lets go of the turn (ReadTurn::leave_held_turn,
  // before it waits mid-request): its follow, if any, ends too.
  static void release_on_this_thread();

  // Puts thread `tid` of this process (0: the calling one) back to the
  // policy and CPUs workers had before any followed. False if the policy
  // could not be put back.
  static bool restore_thread(uint32_t tid);
  // A worker's first read: puts it back if it was started lowered, or held
  // to one CPU, by a following worker.
  static void undo_inherited();

 private:
  CallerCpu caller_cpu_;
  LoneCaller* lone_ = nullptr;  // the session's, once followed
  uint32_t self_ = 0;           // this worker's thread id, once followed
  uint32_t tid_ = 0;            // followed
  uint64_t stops_seen_ = 0;     // LoneCaller::stops() when this follow began
  uint64_t checked_ns_ = 0;
  int cpu_ = -1;
  bool holding_ = false;
};

}  // namespace peregrine::fs
