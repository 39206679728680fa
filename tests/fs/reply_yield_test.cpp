// ReplyYield (fuse.ring_yields): the reply is submitted with the thread at
// SCHED_IDLE and the thread's own policy is back afterwards; a disabled
// one, or one on a real-time thread, is never used; permitted() says
// whether this process may come back from SCHED_IDLE, which is what keeps
// a ring thread from being left there. Each case runs on a thread of its
// own, so the test's main thread keeps its policy whatever happens.
#include "transport/reply_yield.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>

namespace peregrine::fs {
namespace {

template <class F>
void on_own_thread(F&& body) {
  std::thread t(std::forward<F>(body));
  t.join();
}

TEST(ReplyYield, SubmitsAtIdleAndPutsTheThreadsPolicyBack) {
  if (!ReplyYield::permitted()) GTEST_SKIP() << "this process may not leave SCHED_IDLE (no CAP_SYS_NICE)";
  on_own_thread([] {
    // A policy other than the default, to see that it is the one restored.
    sched_param none{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_BATCH, &none), 0);
    ReplyYield y;
    y.start_on_this_thread(true);
    ASSERT_TRUE(y.usable());
    int during = -1;
    y.submit_idle([](void* out) { *static_cast<int*>(out) = sched_getscheduler(0); }, &during);
    EXPECT_EQ(during, SCHED_IDLE) << "the reply was not submitted at SCHED_IDLE";
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH) << "the thread's policy did not come back";
    EXPECT_TRUE(y.usable());
  });
}

TEST(ReplyYield, DisabledIsNeverUsable) {
  on_own_thread([] {
    ReplyYield y;
    y.start_on_this_thread(false);
    EXPECT_FALSE(y.usable());
  });
}

TEST(ReplyYield, RealTimeThreadIsNeverLowered) {
  on_own_thread([] {
    sched_param fifo{};
    fifo.sched_priority = sched_get_priority_min(SCHED_FIFO);
    if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) GTEST_SKIP() << "may not make a real-time thread here";
    ReplyYield y;
    y.start_on_this_thread(true);
    EXPECT_FALSE(y.usable()) << "a real-time ring thread would lose its priority";
  });
}

// permitted() is the kernel's rule for leaving SCHED_IDLE: CAP_SYS_NICE, or
// an RLIMIT_NICE that allows the thread's nice value. Checked on a thread
// that is dropped afterwards.
TEST(ReplyYield, PermittedIsWhetherTheThreadCanComeBack) {
  bool came_back = false;
  on_own_thread([&came_back] {
    sched_param none{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &none), 0) << "lowering is always allowed";
    came_back = sched_setscheduler(0, SCHED_OTHER, &none) == 0;
  });
  EXPECT_EQ(ReplyYield::permitted(), came_back);
}

}  // namespace
}  // namespace peregrine::fs
