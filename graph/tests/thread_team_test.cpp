// ThreadTeam: every index of every loop run exactly once, by a thread of
// the team; loops back to back (delta-stepping's hundreds of rounds), the
// team's size, small loops on the owner alone, helpers really taking
// part, a throw on the owner, and helpers the system refuses to start.
// largest_entry beside
// it: the scan the reader checks every read with.
#include "thread_team.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "largest_entry.h"

namespace peregrine::graph::detail {
namespace {

TEST(ThreadTeam, RunsEveryIndexOnceInEveryLoop) {
  ThreadTeam team(3);
  ASSERT_EQ(team.size(), 3u);
  std::vector<std::atomic<uint32_t>> runs(10000);
  // Sizes around the chunk and loops back to back: a helper still in the
  // last loop, or one that missed a round, would show as a wrong count.
  const size_t sizes[] = {1, ThreadTeam::kItems, ThreadTeam::kItems + 1, 1000, 10000, 7, 4097};
  uint32_t loops = 0;
  for (int repeat = 0; repeat < 200; ++repeat) {
    for (size_t count : sizes) {
      ++loops;
      // Grabs of the default size, of one index and of an odd size, in
      // turn: a helper still using the last loop's size would show too.
      const size_t grabs[] = {ThreadTeam::kItems, 1, 7};
      const size_t items = grabs[loops % 3];
      team.for_each(
          count,
          [&](size_t i, uint32_t t) {
            ASSERT_LT(t, team.size());
            runs[i].fetch_add(1, std::memory_order_relaxed);
          },
          items);
      for (size_t i = 0; i < runs.size(); ++i)
        ASSERT_EQ(runs[i].exchange(0, std::memory_order_relaxed), i < count ? 1u : 0u)
            << "index " << i << " of a loop of " << count << " in grabs of " << items << " (loop " << loops << ")";
    }
  }
}

TEST(ThreadTeam, GrabsOfOneIndexSplitEvenTwoIndices) {
  // Each index a block of work (PageRank's): two indices, each waiting for
  // the other to be running, must be on two threads. Grabbing the default
  // 64 would leave both to the owner (failing here after 10 s).
  ThreadTeam team(2);
  std::atomic<uint32_t> threads_in{0};
  std::atomic<uint32_t> met{0};
  std::vector<uint32_t> who(2, 99);
  team.for_each(
      2,
      [&](size_t i, uint32_t t) {
        who[i] = t;
        threads_in.fetch_add(1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (threads_in.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        if (std::chrono::steady_clock::now() < deadline) met.fetch_add(1);
      },
      1);
  EXPECT_EQ(met.load(), 2u) << "an index waited out its deadline: the two never ran side by side";
  EXPECT_NE(who[0], who[1]) << "both indices ran on thread " << who[0];
}

TEST(ThreadTeam, HelpersTakePart) {
  // Two chunks whose items wait until both have a thread in them: a team
  // that left its helper asleep would fail here (after 10 s), not hang.
  ThreadTeam team(2);
  std::atomic<uint32_t> threads_in{0};
  std::atomic<bool> met{false};
  std::vector<uint32_t> who(2 * ThreadTeam::kItems, 99);
  team.for_each(who.size(), [&](size_t i, uint32_t t) {
    who[i] = t;
    if (i % ThreadTeam::kItems != 0) return;
    threads_in.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (threads_in.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (threads_in.load() >= 2) met = true;
  });
  EXPECT_TRUE(met.load()) << "the second chunk never ran beside the first";
  EXPECT_NE(std::count(who.begin(), who.end(), 1u), 0) << "the helper ran no item";
}

TEST(ThreadTeam, AThrowOnTheOwnerWaitsForTheHelpersAndGoesOn) {
  // The owner throws while the helper is inside an item that goes on
  // after the throw: for_each must not return before that item is done.
  ThreadTeam team(2);
  std::atomic<int> inside{0};
  std::atomic<bool> helper_in{false};
  std::atomic<bool> owner_threw{false};
  auto wait_for = [](const std::atomic<bool>& flag) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flag.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  };
  bool thrown = false;
  try {
    team.for_each(4 * ThreadTeam::kItems, [&](size_t, uint32_t t) {
      inside.fetch_add(1);
      if (t == 0) {
        wait_for(helper_in);
        inside.fetch_sub(1);
        owner_threw = true;
        throw std::runtime_error("owner");
      }
      helper_in = true;
      wait_for(owner_threw);
      volatile uint64_t x = 1;
      for (int k = 0; k < 100000; ++k) x = x * 3 + 1;
      inside.fetch_sub(1);
    });
  } catch (const std::runtime_error&) {
    thrown = true;
  }
  EXPECT_TRUE(thrown);
  EXPECT_TRUE(helper_in.load()) << "the helper never ran";
  EXPECT_EQ(inside.load(), 0) << "a helper still ran an item after for_each gave up";
  // The team serves the next loop whole.
  std::atomic<size_t> done{0};
  team.for_each(1000, [&](size_t, uint32_t) { done.fetch_add(1); });
  EXPECT_EQ(done.load(), 1000u);
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

// A machine out of processes (ulimit -u, a container's pids limit) starts
// no helper: the team runs every index on its owner instead of ending the
// program. In a child that leaves root for an unprivileged user allowed
// no process beyond itself, where every thread start fails.
TEST(ThreadTeam, RunsOnItsOwnerWhenNoHelperCanStart) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to become a user the process limit applies to";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit one{1, 1};
    if (setrlimit(RLIMIT_NPROC, &one) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    ThreadTeam team(4);
    if (team.size() != 1) _exit(3);
    std::vector<uint32_t> runs(1000, 0);
    team.for_each(runs.size(), [&](size_t i, uint32_t t) { runs[i] += t == 0 ? 1 : 100; });
    _exit(std::all_of(runs.begin(), runs.end(), [](uint32_t r) { return r == 1; }) ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended on signal " << WTERMSIG(status);
  // Where root cannot become another user (a user namespace without it
  // mapped) there is no limit to try.
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "could not become uid 65534 with RLIMIT_NPROC 1";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: a helper started, 4: an index not run once";
}

TEST(LargestEntry, FirstNotBelowIsTheFirstSuchIndex) {
  EXPECT_EQ(first_not_below({}, 1), 0u);
  for (size_t len = 1; len < 40; ++len) {
    std::vector<uint32_t> v(len, 5);
    EXPECT_EQ(first_not_below(v, 6), len) << "none, length " << len;
    for (size_t at = 0; at < len; ++at) {
      std::vector<uint32_t> w(len, 5);
      w[at] = 0x80000000u;
      if (at + 1 < len) w[len - 1] = 6;  // a later one too: the first is asked for
      ASSERT_EQ(first_not_below(w, 6), at) << "length " << len << ", at " << at;
    }
  }
}

}  // namespace
}  // namespace peregrine::graph::detail
