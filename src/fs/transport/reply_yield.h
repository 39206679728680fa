// ReplyYield: a ring thread sends a lone reply at SCHED_IDLE
// (fuse.ring_yields), so that the application it wakes runs on this CPU.
//
// Why: a program making one small request after another sleeps in the
// kernel while the ring thread, beside it on its CPU, answers. The reply
// wakes the program while the ring thread is still running, so the
// scheduler puts the program on another CPU, idle and on a virtual
// machine often halted: every reply then wakes a halted vCPU (10 us or
// more), and the next request goes to that CPU's ring. A CPU that runs
// only SCHED_IDLE threads counts as idle to the scheduler, which then
// wakes the program here, where it preempts the ring thread at once.
// Measured on 2 vCPUs, tmpfs members, 512-byte reads from one process:
// 32K reads/s without, 200K with (docs/transport.md).
//
// The policy is lowered only around the submission of the reply and put
// back before the thread waits for the next request, so the ring thread
// never sleeps, or competes for long, at SCHED_IDLE; the caller does it
// only while no other thread of the daemon wants the CPU (no member IO
// outstanding). Leaving SCHED_IDLE needs CAP_SYS_NICE or a high enough
// RLIMIT_NICE: permitted() finds out on a throwaway thread, so that a
// daemon that could not come back never tries.
//
// Thread rules: permitted() from any thread. A ReplyYield belongs to the
// ring thread that called start_on_this_thread(); only it calls
// submit_idle().
#pragma once

#include <sched.h>

namespace peregrine::fs {

class ReplyYield {
 public:
  // Whether this process may lower a thread to SCHED_IDLE and raise it
  // back to its policy. Tries once, on a thread made for the purpose.
  static bool permitted();

  // On the ring thread: remembers its policy. A real-time thread is never
  // lowered (usable() stays false).
  void start_on_this_thread(bool enabled);
  bool usable() const { return usable_; }

  // Runs `submit(ctx)` at SCHED_IDLE, then puts the policy back. If it
  // cannot be put back (never expected after permitted()), usable()
  // becomes false, and the thread stays at the lower policy.
  void submit_idle(void (*submit)(void*), void* ctx);

 private:
  bool usable_ = false;
  int policy_ = SCHED_OTHER;
  sched_param param_{};
};

}  // namespace peregrine::fs
