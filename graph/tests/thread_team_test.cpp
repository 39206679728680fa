// ThreadTeam: every index of every loop run exactly once, by a thread of
// the team; loops back to back (delta-stepping's hundreds of rounds), the
// team's size, and small loops on the owner alone. largest_entry beside
// it: the scan the reader checks every read with.
#include "thread_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "largest_entry.h"

namespace peregrine::graph::detail {
namespace {

TEST(ThreadTeam, RunsEveryIndexOnceInEveryLoop) {
  ThreadTeam team(3);
  ASSERT_EQ(team.size(), 3u);
  std::vector<std::atomic<uint32_t>> runs(10000);
  std::vector<std::atomic<uint32_t>> by_thread(team.size());
  // Sizes around the chunk and loops back to back: a helper still in the
  // last loop, or one that missed a round, would show as a wrong count.
  const size_t sizes[] = {1, ThreadTeam::kItems, ThreadTeam::kItems + 1, 1000, 10000, 7, 4097};
  uint32_t loops = 0;
  for (int repeat = 0; repeat < 200; ++repeat) {
    for (size_t count : sizes) {
      ++loops;
      team.for_each(count, [&](size_t i, uint32_t t) {
        ASSERT_LT(t, team.size());
        runs[i].fetch_add(1, std::memory_order_relaxed);
        by_thread[t].fetch_add(1, std::memory_order_relaxed);
      });
      for (size_t i = 0; i < runs.size(); ++i)
        ASSERT_EQ(runs[i].exchange(0, std::memory_order_relaxed), i < count ? 1u : 0u)
            << "index " << i << " of a loop of " << count << " (loop " << loops << ")";
    }
  }
  EXPECT_GT(by_thread[0].load(), 0u) << "the owner takes part";
}

TEST(ThreadTeam, SmallLoopsRunOnTheOwnerAlone) {
  ThreadTeam team(2);
  const std::thread::id owner = std::this_thread::get_id();
  std::vector<std::thread::id> who(ThreadTeam::kItems);
  team.for_each(who.size(), [&](size_t i, uint32_t t) {
    EXPECT_EQ(t, 0u);
    who[i] = std::this_thread::get_id();
  });
  for (const auto& id : who) EXPECT_EQ(id, owner);
}

TEST(ThreadTeam, OneThreadStartsNoHelper) {
  ThreadTeam team(1);
  EXPECT_EQ(team.size(), 1u);
  const std::thread::id owner = std::this_thread::get_id();
  size_t sum = 0;
  team.for_each(100000, [&](size_t i, uint32_t t) {
    EXPECT_EQ(t, 0u);
    EXPECT_EQ(std::this_thread::get_id(), owner);
    sum += i;
  });
  EXPECT_EQ(sum, size_t{100000} * 99999 / 2);
}

TEST(ThreadTeam, ReturnsOnlyWhenEveryChunkIsDone) {
  // Chunks long enough that helpers are still in theirs when the owner
  // runs out of work: for_each must wait for them.
  ThreadTeam team(3);
  for (int repeat = 0; repeat < 20; ++repeat) {
    std::atomic<size_t> done{0};
    std::atomic<int> inside{0};
    team.for_each(2000, [&](size_t i, uint32_t) {
      inside.fetch_add(1);
      volatile uint64_t x = i;
      for (int k = 0; k < 2000; ++k) x = x * 6364136223846793005u + 1;
      done.fetch_add(1);
      inside.fetch_sub(1);
    });
    ASSERT_EQ(inside.load(), 0) << "an item still running after for_each returned";
    ASSERT_EQ(done.load(), 2000u);
  }
}

TEST(LargestEntry, FindsTheLargestAnywhere) {
  EXPECT_EQ(largest_entry({}), 0u);
  // Every length around the vector width, the largest at every position
  // (the vector body, its tail), and values with the top bit set (an
  // unsigned compare, not a signed one).
  for (size_t len = 1; len < 40; ++len) {
    for (size_t at = 0; at < len; ++at) {
      std::vector<uint32_t> v(len, 7);
      v[at] = 0x80000001u;
      ASSERT_EQ(largest_entry(v), 0x80000001u) << "length " << len << ", at " << at;
      v[at] = 8;
      ASSERT_EQ(largest_entry(v), 8u) << "length " << len << ", at " << at;
    }
  }
}

}  // namespace
}  // namespace peregrine::graph::detail
