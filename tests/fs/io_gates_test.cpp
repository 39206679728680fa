// IoGates' before_wait hook: a worker about to wait at a gate first hands
// on its staged IO (fuse.batch_requests), since that IO may hold the very
// gate it waits for; a worker that enters at once does not.
#include "peregrine/fs/io_gates.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace peregrine::fs {
namespace {

TEST(IoGatesTest, EnteringWithoutWaitingRunsNoHook) {
  std::atomic<int> hooks{0};
  IoGates gates([&] { ++hooks; });
  gates.lock_shared(1);
  gates.lock_shared(1);
  gates.unlock_shared(1);
  gates.unlock_shared(1);
  gates.lock_exclusive(1);
  gates.lock_shared(2);  // another stripe
  gates.unlock_shared(2);
  gates.unlock_exclusive(1);
  EXPECT_EQ(hooks.load(), 0);
}

// A partial write whose own staged write still holds the gate shared: the
// hook hands the staged write on (here: completes it), and exclusive entry
// follows. Without the hook the thread would wait for itself forever.
TEST(IoGatesTest, ExclusiveEntryBehindOwnStagedIoHandsItOnFirst) {
  int hooks = 0;
  IoGates* self = nullptr;
  IoGates gates([&] {
    ++hooks;
    self->unlock_shared(5);  // the staged IO completes once handed on
  });
  self = &gates;
  gates.lock_shared(5);  // held by this thread's staged write
  gates.lock_exclusive(5);
  EXPECT_EQ(hooks, 1);
  gates.unlock_exclusive(5);
  gates.lock_shared(5 + 256);  // same stripe: free again
  gates.unlock_shared(5 + 256);
}

TEST(IoGatesTest, SharedEntryThatMustWaitRunsTheHookFirst) {
  std::promise<void> hook_ran;
  IoGates gates([&] { hook_ran.set_value(); });
  gates.lock_exclusive(9);  // a truncate on another thread, say
  std::atomic<bool> entered{false};
  std::thread reader([&] {
    gates.lock_shared(9);
    entered = true;
    gates.unlock_shared(9);
  });
  // The bound only turns a hang into a failure.
  bool hook_first = hook_ran.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  EXPECT_FALSE(entered.load()) << "entered while the gate was held exclusive";
  gates.unlock_exclusive(9);
  reader.join();
  EXPECT_TRUE(hook_first) << "waited at the gate without running the hook";
  EXPECT_TRUE(entered.load());
}

}  // namespace
}  // namespace peregrine::fs
