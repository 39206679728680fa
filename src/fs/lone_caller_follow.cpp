#include "peregrine/fs/lone_caller_follow.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace peregrine::fs {
namespace {

// What a worker had before any followed: every worker starts with the
// process's policy and CPUs, and only a following one changes its own.
struct WorkerPlacement {
  bool usable = false;  // SCHED_OTHER or SCHED_BATCH, whose threads may be lowered and put back
  int policy = SCHED_OTHER;
  cpu_set_t cpus{};
};

std::once_flag g_capture;
WorkerPlacement g_placement;
std::atomic<bool> g_captured{false};

// The first following worker records its own placement; not usable if it
// must not be lowered (real-time or idle already, set by an administrator).
const WorkerPlacement& placement() {
  std::call_once(g_capture, [] {
    const int policy = sched_getscheduler(0);
    if ((policy == SCHED_OTHER || policy == SCHED_BATCH) &&
        sched_getaffinity(0, sizeof g_placement.cpus, &g_placement.cpus) == 0) {
      g_placement.policy = policy;
      g_placement.usable = true;
    }
    g_captured.store(true, std::memory_order_release);
  });
  return g_placement;
}

// The placement if a worker has followed, else null.
const WorkerPlacement* placement_if_captured() {
  if (!g_captured.load(std::memory_order_acquire) || !g_placement.usable) return nullptr;
  return &g_placement;
}

}  // namespace

void LoneCallerFollow::follow(uint32_t tid, uint64_t now_ns, LoneCaller& lone) {
  if (!lone.may_follow(now_ns) || !placement().usable) {
    release(&lone);
    return;
  }
  // RELEASE and RELEASEDIR come without their caller: the followed one's.
  if (tid == 0) tid = tid_;
  if (tid == 0) return;
  if (!holding_ || tid != tid_ || now_ns - checked_ns_ >= kCheckNs) {
    checked_ns_ = now_ns;
    tid_ = tid;
    const int cpu = caller_cpu_.of(tid);
    if (cpu < 0) {
      release(&lone);
      return;
    }
    if (!holding_ || cpu != cpu_) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      // Refused where the CPU is not the process's to use (a cpuset).
      if (sched_setaffinity(0, sizeof one, &one) != 0) {
        release(&lone);
        return;
      }
      if (!holding_) {
        sched_param none{};
        if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) {
          restore_thread(0);
          return;
        }
      }
      holding_ = true;
      cpu_ = cpu;
    }
  }
  lone.note_followed_read(static_cast<uint32_t>(gettid()), now_ns);
}

void LoneCallerFollow::release(LoneCaller* lone) {
  if (!holding_) return;
  holding_ = false;
  cpu_ = -1;
  restore_thread(0);
  if (lone != nullptr) lone->note_not_following();
}

void LoneCallerFollow::restore_thread(uint32_t tid) {
  const WorkerPlacement* p = placement_if_captured();
  if (p == nullptr) return;
  const pid_t thread = static_cast<pid_t>(tid);
  sched_param none{};
  sched_setscheduler(thread, p->policy, &none);
  if (sched_setaffinity(thread, sizeof p->cpus, &p->cpus) != 0) {
    // The CPUs the process had are no longer all its own (its cpuset
    // changed): every CPU, of which the kernel keeps those allowed.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
    sched_setaffinity(thread, sizeof all, &all);
  }
}

void LoneCallerFollow::undo_inherited() {
  if (placement_if_captured() != nullptr && sched_getscheduler(0) == SCHED_IDLE) restore_thread(0);
}

}  // namespace peregrine::fs
