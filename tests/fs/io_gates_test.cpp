// IoGates' before_wait hook: a worker about to wait at a gate first hands
// on its staged IO (fuse.batch_requests), since that IO may hold the very
// gate it waits for; a worker that enters at once does not.
//
// And the kernel's order (IoSpan): a read waits for an older overlapping
// write inside, not for a newer one or one elsewhere; a write of bytes a
// page-cache fill read recently is refused shared entry and told so, one
// whose bytes only read(2) touched is not. A try at exclusive entry enters
// only a free gate. Every writer's entry makes the write generation new,
// and a read that enters beside a writer is given none.
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

// A ring thread's partial write (fs_write.cpp) enters only a free gate and
// never waits: not past a shared holder or an exclusive one, and then it
// keeps others out like lock_exclusive.
TEST(IoGatesTest, TryExclusiveEntersOnlyAFreeGateAndNeverWaits) {
  std::atomic<int> hooks{0};
  IoGates gates([&] { ++hooks; });
  gates.lock_shared(1);
  EXPECT_FALSE(gates.try_lock_exclusive(1));
  gates.unlock_shared(1);
  gates.lock_exclusive(1);
  EXPECT_FALSE(gates.try_lock_exclusive(1));
  gates.unlock_exclusive(1);
  ASSERT_TRUE(gates.try_lock_exclusive(1));
  EXPECT_FALSE(gates.try_lock_exclusive(1));
  EXPECT_TRUE(gates.try_lock_exclusive(2));  // another stripe
  gates.unlock_exclusive(2);
  std::atomic<bool> entered{false};
  std::thread reader([&] {
    gates.lock_shared(1);
    entered = true;
    gates.unlock_shared(1);
  });
  // The reader waits (its hook runs) until the partial write leaves.
  while (hooks.load() == 0 && !entered.load()) std::this_thread::yield();
  EXPECT_FALSE(entered.load());
  gates.unlock_exclusive(1);
  reader.join();
  EXPECT_TRUE(entered.load());
  EXPECT_EQ(hooks.load(), 1);
}

// Truncate waiting for exclusive entry behind a reader is not overtaken by
// a partial write's try, which would starve it.
TEST(IoGatesTest, TryExclusiveDoesNotOvertakeAWaitingExclusiveEntry) {
  std::atomic<int> hooks{0};
  IoGates gates([&] { ++hooks; });
  gates.lock_shared(1);
  std::atomic<bool> truncate_entered{false};
  std::thread truncate([&] {
    gates.lock_exclusive(1);
    truncate_entered = true;
    gates.unlock_exclusive(1);
  });
  while (hooks.load() == 0 && !truncate_entered.load()) std::this_thread::yield();
  ASSERT_FALSE(truncate_entered.load());
  // The hook runs before the wait; the waiter is counted before the hook
  // runs, so the try cannot come in between.
  EXPECT_FALSE(gates.try_lock_exclusive(1));
  gates.unlock_shared(1);
  truncate.join();
  EXPECT_TRUE(truncate_entered.load());
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

// A read the kernel sent after a write of the same bytes, run by another
// worker that got to the gate first, must not answer with the bytes from
// before the write.
TEST(IoGatesTest, ReadWaitsForAnOlderOverlappingWriteInside) {
  std::promise<void> hook_ran;
  IoGates gates([&] { hook_ran.set_value(); });
  const IoSpan write{10, 0, 8192};
  ASSERT_TRUE(gates.lock_shared_write(3, write));
  std::atomic<bool> entered{false};
  std::thread reader([&] {
    gates.lock_shared_read(3, IoSpan{12, 4096, 8192}, false);
    entered = true;
    gates.unlock_shared(3);
  });
  bool waited = hook_ran.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(waited) << "the read did not wait for the older write";
  EXPECT_FALSE(entered.load()) << "the read entered while an older write of its bytes was inside";
  gates.unlock_shared_write(3, write);
  reader.join();
  EXPECT_TRUE(entered.load());
}

TEST(IoGatesTest, ReadPassesNewerWritesAndWritesOfOtherBytes) {
  int hooks = 0;
  IoGates gates([&] { ++hooks; });
  const IoSpan newer{20, 0, 4096}, elsewhere{5, 65536, 69632}, other_file{6, 0, 4096}, unknown{0, 0, 4096};
  ASSERT_TRUE(gates.lock_shared_write(3, newer));
  ASSERT_TRUE(gates.lock_shared_write(3, elsewhere));
  ASSERT_TRUE(gates.lock_shared_write(3 + 256, other_file));  // same stripe, another inode
  ASSERT_TRUE(gates.lock_shared_write(3, unknown));
  gates.lock_shared_read(3, IoSpan{15, 0, 8192}, false);
  gates.unlock_shared(3);
  EXPECT_EQ(hooks, 0) << "a read waited for a write it need not wait for";
  gates.unlock_shared_write(3, newer);
  gates.unlock_shared_write(3, elsewhere);
  gates.unlock_shared_write(3 + 256, other_file);
  gates.unlock_shared_write(3, unknown);
}

TEST(IoGatesTest, WriteOfBytesAPageCacheFillReadIsRefusedSharedEntry) {
  IoGates gates;
  gates.lock_shared_read(7, IoSpan{30, 0, 131072}, true);  // a fault's readahead
  gates.unlock_shared(7);
  gates.lock_shared_read(7, IoSpan{31, 262144, 266240}, false);  // read(2), direct
  gates.unlock_shared(7);

  // Older or newer than the fill: the kernel may have cached either way.
  EXPECT_FALSE(gates.lock_shared_write(7, IoSpan{29, 4096, 8192}));
  EXPECT_FALSE(gates.lock_shared_write(7, IoSpan{40, 126976, 131072}));
  EXPECT_TRUE(gates.page_cache_holds(7, IoSpan{40, 0, 4096}));
  // Bytes only read(2) read, bytes of another inode, a write of unknown order.
  EXPECT_FALSE(gates.page_cache_holds(7, IoSpan{41, 262144, 266240}));
  EXPECT_FALSE(gates.page_cache_holds(7 + 256, IoSpan{41, 0, 4096}));
  EXPECT_FALSE(gates.page_cache_holds(7, IoSpan{0, 0, 4096}));
  ASSERT_TRUE(gates.lock_shared_write(7, IoSpan{41, 262144, 266240}));
  gates.unlock_shared_write(7, IoSpan{41, 262144, 266240});
  // Refused entry left nothing behind: exclusive entry is free.
  gates.lock_exclusive(7);
  gates.unlock_exclusive(7);
}

// The ring of fills is small: a write older than a fill it forgot may
// have been overtaken by it, and is told so.
TEST(IoGatesTest, WriteOlderThanAForgottenFillIsToldThePageCacheMayHoldIt) {
  IoGates gates;
  for (uint64_t u = 100; u < 100 + 200; ++u) {
    gates.lock_shared_read(8, IoSpan{u, u * 4096 + (1 << 30), u * 4096 + (1 << 30) + 4096}, true);
    gates.unlock_shared(8);
  }
  EXPECT_TRUE(gates.page_cache_holds(8, IoSpan{150, 0, 4096}));
  EXPECT_FALSE(gates.page_cache_holds(8, IoSpan{400, 0, 4096}));
}

// The generation read_blocks.h keeps blocks under: new at every writer's
// entry (aligned write, exclusive, a successful try), unchanged by reads,
// and none (0) while a writer is inside.
TEST(IoGatesTest, EveryWritersEntryMakesANewWriteGeneration) {
  IoGates gates;
  const uint64_t g0 = gates.write_generation(3);
  ASSERT_NE(g0, 0u);
  uint64_t seen = 0;
  gates.lock_shared_read(3, IoSpan{10, 0, 100}, false, &seen);
  EXPECT_EQ(seen, g0);
  gates.unlock_shared(3);
  gates.lock_shared(3);
  gates.unlock_shared(3);
  EXPECT_EQ(gates.write_generation(3), g0) << "reads changed it";

  ASSERT_TRUE(gates.lock_shared_write(3, IoSpan{11, 0, 4096}));
  EXPECT_EQ(gates.write_generation(3), 0u) << "a writer is inside";
  gates.lock_shared_read(3, IoSpan{12, 8192, 8200}, false, &seen);
  EXPECT_EQ(seen, 0u) << "a read beside a writer was given a generation";
  gates.unlock_shared(3);
  gates.unlock_shared_write(3, IoSpan{11, 0, 4096});
  const uint64_t g1 = gates.write_generation(3);
  EXPECT_NE(g1, 0u);
  EXPECT_NE(g1, g0);

  gates.lock_exclusive(3);
  EXPECT_EQ(gates.write_generation(3), 0u);
  gates.unlock_exclusive(3);
  const uint64_t g2 = gates.write_generation(3);
  EXPECT_NE(g2, g1);
  EXPECT_NE(g2, g0);

  ASSERT_TRUE(gates.try_lock_exclusive(3));
  gates.unlock_exclusive(3);
  const uint64_t g3 = gates.write_generation(3);
  EXPECT_NE(g3, g2);
  // A write with no unique (the kernel's own page writeback) counts too.
  ASSERT_TRUE(gates.lock_shared_write(3, IoSpan{0, 0, 4096}));
  EXPECT_EQ(gates.write_generation(3), 0u);
  gates.unlock_shared_write(3, IoSpan{0, 0, 4096});
  EXPECT_NE(gates.write_generation(3), g3);
}

}  // namespace
}  // namespace peregrine::fs
