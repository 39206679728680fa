// ReplyYield (fuse.ring_yield_ns): the reply is submitted with the thread at
// SCHED_IDLE and the thread's own policy and nice value are back
// afterwards; a disabled one is never used and a real-time thread never
// lowered; a window that outlasts kStallNs backs off; permitted() follows
// the kernel's rule for leaving SCHED_IDLE, which is what keeps a ring
// thread from being left there. Each case runs on a thread of its own, so
// the test's main thread keeps its policy whatever happens.
#include "transport/reply_yield.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

template <class F>
void on_own_thread(F&& body) {
  std::thread t(std::forward<F>(body));
  t.join();
}

// Whether CAP_SYS_NICE is in this process's effective set (/proc).
bool has_cap_sys_nice() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 23) & 1;
  }
  return false;
}

TEST(ReplyYield, SubmitsAtIdleAndPutsPolicyAndNiceBack) {
  if (!ReplyYield::permitted()) GTEST_SKIP() << "this process may not leave SCHED_IDLE (no CAP_SYS_NICE)";
  on_own_thread([] {
    // A policy and nice value other than the defaults, to see that they
    // are the ones restored.
    sched_param none{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_BATCH, &none), 0);
    ASSERT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 5), 0);
    ReplyYield y;
    y.start_on_this_thread(true);
    ASSERT_TRUE(y.usable(monotonic_ns()));
    int during = -1;
    EXPECT_EQ(y.submit_idle([](void* out) { *static_cast<int*>(out) = sched_getscheduler(0); }, &during),
              ReplyYield::Outcome::lowered);
    EXPECT_EQ(during, SCHED_IDLE) << "the reply was not submitted at SCHED_IDLE";
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH) << "the thread's policy did not come back";
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), 5) << "the nice value changed";
    EXPECT_TRUE(y.usable(monotonic_ns()));
  });
}

TEST(ReplyYield, DisabledIsNeverUsable) {
  ReplyYield y;
  y.start_on_this_thread(false);
  EXPECT_FALSE(y.usable(monotonic_ns()));
}

TEST(ReplyYield, RealTimeThreadIsNeverLowered) {
  on_own_thread([] {
    sched_param fifo{};
    fifo.sched_priority = sched_get_priority_min(SCHED_FIFO);
    if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) GTEST_SKIP() << "may not make a real-time thread here";
    ReplyYield y;
    y.start_on_this_thread(true);
    int during = -1;
    EXPECT_EQ(y.submit_idle([](void* out) { *static_cast<int*>(out) = sched_getscheduler(0); }, &during),
              ReplyYield::Outcome::not_lowered);
    EXPECT_EQ(during, SCHED_FIFO) << "a real-time ring thread would lose its priority";
    EXPECT_EQ(sched_getscheduler(0), SCHED_FIFO);
  });
}

// A submission whose window outlasts kStallNs (here the callback itself
// takes that long) stops lowering the thread for a while, twice as long
// after a second stall, then allows it again; a window that does not stall
// halves the next back-off.
TEST(ReplyYield, ALongWindowBacksOffLongerIfItRecurs) {
  if (!ReplyYield::permitted()) GTEST_SKIP() << "this process may not leave SCHED_IDLE (no CAP_SYS_NICE)";
  on_own_thread([] {
    ReplyYield y;
    y.start_on_this_thread(true);
    auto outlast = [](void*) {
      const uint64_t until = monotonic_ns() + ReplyYield::kStallNs + 1'000'000;
      while (monotonic_ns() < until) std::this_thread::yield();
    };
    EXPECT_EQ(y.submit_idle(outlast, nullptr), ReplyYield::Outcome::stalled);
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
    uint64_t now = monotonic_ns();
    EXPECT_FALSE(y.usable(now)) << "still lowering right after a stall";
    EXPECT_TRUE(y.usable(now + ReplyYield::kMinBackOffNs)) << "never lowering again after a stall";
    EXPECT_EQ(y.back_off_ns(), 2 * ReplyYield::kMinBackOffNs);
    EXPECT_EQ(y.submit_idle(outlast, nullptr), ReplyYield::Outcome::stalled);
    now = monotonic_ns();
    EXPECT_FALSE(y.usable(now + ReplyYield::kMinBackOffNs)) << "a second stall backs off no longer";
    EXPECT_TRUE(y.usable(now + 2 * ReplyYield::kMinBackOffNs));
    EXPECT_EQ(y.submit_idle([](void*) {}, nullptr), ReplyYield::Outcome::lowered);
    EXPECT_EQ(y.back_off_ns(), 2 * ReplyYield::kMinBackOffNs) << "a window without a stall halves it";
  });
}

// The kernel's rule (sched_setscheduler(2)): a thread may leave SCHED_IDLE
// with CAP_SYS_NICE, or when RLIMIT_NICE allows its nice value.
TEST(ReplyYield, PermittedFollowsTheKernelsRule) {
  rlimit nice_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NICE, &nice_limit), 0);
  const int nice_value = getpriority(PRIO_PROCESS, 0);
  const bool rlimit_allows = nice_limit.rlim_cur == RLIM_INFINITY || rlim_t(20 - nice_value) <= nice_limit.rlim_cur;
  // CapEff counts in this process's user namespace; the kernel checks the
  // initial one.
  std::ifstream uid_map("/proc/self/uid_map");
  long inside = -1, outside = -1, count = 0;
  uid_map >> inside >> outside >> count;
  const bool initial_namespace = inside == 0 && outside == 0 && count == 4294967295L;
  if ((has_cap_sys_nice() && initial_namespace) || rlimit_allows) {
    EXPECT_TRUE(ReplyYield::permitted());
  } else if (!has_cap_sys_nice()) {
  } else {
    EXPECT_FALSE(ReplyYield::permitted());
  }
}

}  // namespace
}  // namespace peregrine::fs
