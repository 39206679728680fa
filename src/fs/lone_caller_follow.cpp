#include "peregrine/fs/lone_caller_follow.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
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

thread_local LoneCallerFollow* tls_holding = nullptr;

// Whether /proc shows this process's own pid namespace: the FUSE request's
// pid is a thread id there, and /proc/<tid> must name the same thread.
bool proc_is_ours() {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[32];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return false;
  pid_t pid = 0;
  auto [ptr, ec] = std::from_chars(buf, buf + n, pid);
  return ec == std::errc{} && ptr != buf + n && *ptr == ' ' && pid == getpid();
}

// The first following worker records its own placement; not usable if it
// must not be lowered (real-time or idle already, set by an administrator)
// or /proc is another pid namespace's.
const WorkerPlacement& placement() {
  std::call_once(g_capture, [] {
    const int policy = sched_getscheduler(0);
    if ((policy == SCHED_OTHER || policy == SCHED_BATCH) &&
        sched_getaffinity(0, sizeof g_placement.cpus, &g_placement.cpus) == 0 && proc_is_ours()) {
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
  lone_ = &lone;
  if (self_ == 0) self_ = static_cast<uint32_t>(gettid());
  // A look-out stopped this follow and put the thread back (stalled, or
  // idle): held no longer, whatever this object last did.
  if (holding_ && lone.stops() != stops_seen_) {
    holding_ = false;
    if (tls_holding == this) tls_holding = nullptr;
    cpu_ = -1;
  }
  if (!lone.may_follow(now_ns) || !placement().usable) {
    release();
    return;
  }
  // RELEASE and RELEASEDIR come without their caller: the followed one's,
  // while one is followed; they start nothing.
  if (tid == 0) {
    if (!holding_) return;
    tid = tid_;
  }
  if (!holding_ || tid != tid_ || now_ns - checked_ns_ >= kCheckNs) {
    checked_ns_ = now_ns;
    tid_ = tid;
    const int cpu = caller_cpu_.of(tid);
    // Not a CPU of the daemon's own (it was started on fewer): stay.
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &placement().cpus)) {
      release();
      return;
    }
    if (!holding_ || cpu != cpu_) {
      // Read before the thread is placed: a stop after it is seen next time.
      if (!holding_) stops_seen_ = lone.stops();
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      // Refused where the CPU is no longer the process's to use (a cpuset).
      if (sched_setaffinity(0, sizeof one, &one) != 0) {
        release();
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
      tls_holding = this;
      cpu_ = cpu;
    }
  }
  lone.note_followed_read(self_, now_ns);
}

void LoneCallerFollow::release() {
  if (!holding_) return;
  const bool back = restore_thread(0);
  // The run is over for the look-out either way.
  if (lone_ != nullptr) lone_->note_not_following(self_);
  if (!back) {
    // Still lowered: following is off for good (the right to come back
    // was lost since the daemon started); the next read tries again.
    if (lone_ != nullptr) lone_->set_may_follow(false);
    return;
  }
  holding_ = false;
  if (tls_holding == this) tls_holding = nullptr;
  cpu_ = -1;
}

void LoneCallerFollow::release_on_this_thread() {
  if (tls_holding != nullptr) tls_holding->release();
}

bool LoneCallerFollow::restore_thread(uint32_t tid) {
  const WorkerPlacement* p = placement_if_captured();
  if (p == nullptr) return true;
  const pid_t thread = static_cast<pid_t>(tid);
  sched_param none{};
  const bool policy_back = sched_setscheduler(thread, p->policy, &none) == 0;
  if (sched_setaffinity(thread, sizeof p->cpus, &p->cpus) != 0) {
    // The CPUs the process had are no longer all its own (its cpuset
    // changed): every CPU, of which the kernel keeps those allowed.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
    sched_setaffinity(thread, sizeof all, &all);
  }
  return policy_back;
}

void LoneCallerFollow::undo_inherited() {
  const WorkerPlacement* p = placement_if_captured();
  if (p == nullptr) return;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  sched_getaffinity(0, sizeof cpus, &cpus);
  // Lowered, or held to one CPU where workers have several: a follower's.
  if (sched_getscheduler(0) == SCHED_IDLE || (CPU_COUNT(&cpus) == 1 && CPU_COUNT(&p->cpus) > 1)) restore_thread(0);
}

}  // namespace peregrine::fs
