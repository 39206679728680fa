// ReplyYield: a ring thread sends the replies to its requests at
// SCHED_IDLE (fuse.ring_yield_ns), so that the application they wake runs
// on this CPU: those it made, and those another thread made and handed
// back (a blocking-op thread's fsync, a page-cache store). FuseRing::run()
// decides when: every round but those with direct reads or writes, and of
// those only a lone, quickly made reply.
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
// 33K reads/s without, 157-176K with (docs/performance-history.md).
//
// The cost: once preempted, the ring thread waits at SCHED_IDLE until its
// CPU has nothing else of its scheduling group to run (threads of other
// sessions or cgroups compete with the group as a whole, so they do not
// starve it): normally the program, which soon sends its next request and
// sleeps. The policy is put back before the thread waits for the next
// request, so it never sleeps lowered. A direct read or write (O_DIRECT,
// or a fuse.cache = direct mount) yields only alone, made within
// fuse.ring_yield_ns of the thread's wake-up (default 1.5 us) and while no
// member IO is outstanding (no drive thread about to want the CPU): the
// program and the ring thread then share one CPU, one after the other,
// which costs less than a halted CPU's wake-up only while the ring
// thread's part is that short. Longer ones (a 4 KiB read
// out of tmpfs members, 3-5 us) measured faster with the two on different
// CPUs: 4 KiB reads at QD 1 95-99K/s with no yielding, 88-91K/s yielding
// every lone reply, 105K/s with this bound. Every other reply (names,
// attributes, xattrs, page-cache reads and writebacks) yields whatever
// its length and while the members write back what was answered before
// it: an unpack of /usr/include on disk members took 3.5 s instead of
// 6.8, a walk of it 0.65 s instead of 1.45, 512-byte buffered reads 391K/s
// instead of 65K/s, O_DIRECT unchanged. Replies handed back count since
// 2026-12-02: before, an fsync's reply woke its caller onto the CPU the
// blocking-op thread had left idle, and SQLite's commits (WAL,
// synchronous=FULL, disk members) crossed CPUs at every one; lowered,
// 2,000 commits took 0.337 s against 0.399 (medians of 15, Intel guest).
// A
// window that still lasted longer than kStallNs (the CPU was busy with
// something else, or the woken program ran that long) turns yielding off
// for a while: kMinBackOffNs after a lone stall, twice as long after each
// stall that follows the end of a back-off, up to kMaxBackOffNs, so that
// a CPU that keeps the thread waiting soon sees it lowered rarely; each
// window that does not stall halves the next back-off again.
//
// Leaving SCHED_IDLE needs CAP_SYS_NICE or a high enough RLIMIT_NICE:
// permitted() finds out on a throwaway thread, so that a daemon that could
// not come back never tries. A thread found at a policy other than
// SCHED_OTHER or SCHED_BATCH (real-time, or set by an administrator) is
// never lowered.
//
// Thread rules: permitted() from any thread. A ReplyYield belongs to the
// ring thread that called start_on_this_thread(); only it calls
// submit_idle().
#pragma once

#include <cstdint>

namespace peregrine::fs {

class ReplyYield {
 public:
  static constexpr uint64_t kStallNs = 1'000'000;
  static constexpr uint64_t kMinBackOffNs = 10'000'000;
  static constexpr uint64_t kMaxBackOffNs = 10'000'000'000;

  // Whether this process may lower a thread to SCHED_IDLE and raise it
  // back to its policy. Tries once, on a thread made for the purpose.
  static bool permitted();

  void start_on_this_thread(bool enabled) { enabled_ = enabled; }
  // Whether submit_idle() would lower the thread now.
  bool usable(uint64_t now_ns) const { return enabled_ && now_ns >= backed_off_until_ns_; }
  // How long the next stall turns yielding off.
  uint64_t back_off_ns() const { return back_off_ns_; }

  enum class Outcome {
    lowered,      // submitted at SCHED_IDLE, policy back
    not_lowered,  // submitted at the thread's own policy (a real-time one,
                  // or the kernel refused)
    stalled,      // lowered, and the window outlasted kStallNs: backing off
                  // (back_off_ns() long)
    stuck,        // the policy could not be put back: disabled for good
  };
  // Runs `submit(ctx)`, at SCHED_IDLE if the thread's policy is SCHED_OTHER
  // or SCHED_BATCH, then puts that policy back.
  Outcome submit_idle(void (*submit)(void*), void* ctx);

 private:
  bool enabled_ = false;
  uint64_t backed_off_until_ns_ = 0;
  uint64_t back_off_ns_ = kMinBackOffNs;  // the next stall's
};

}  // namespace peregrine::fs
