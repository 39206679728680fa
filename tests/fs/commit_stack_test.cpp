// CommitStack: replies pushed by many threads all reach the ring thread,
// each once, and a ring thread that sleeps is always woken for a push it
// did not see (the lost-wake-up race), with no wake-up while it runs.
// Labelled engine: it runs under ThreadSanitizer.
#include "transport/commit_stack.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace peregrine::fs {
namespace {

TEST(CommitStack, TakesEveryPushedEntryOnce) {
  CommitStack s(8);
  EXPECT_FALSE(s.push(3));
  EXPECT_FALSE(s.push(5));
  std::vector<uint32_t> got;
  s.take_all([&](uint32_t e) { got.push_back(e); });
  EXPECT_EQ(got, (std::vector<uint32_t>{5, 3}));
  got.clear();
  s.take_all([&](uint32_t e) { got.push_back(e); });
  EXPECT_TRUE(got.empty());
}

TEST(CommitStack, OnlyAPushAfterPrepareSleepAsksForAWakeUp) {
  CommitStack s(4);
  ASSERT_TRUE(s.prepare_sleep());
  EXPECT_TRUE(s.push(1));   // the sleeper must be woken
  EXPECT_FALSE(s.push(2));  // once is enough
  s.awake();
  EXPECT_FALSE(s.prepare_sleep()) << "entries are waiting: must not sleep";
}

// Producers push entries they own (each entry goes round producer ->
// ring -> producer, as a request's entry does), the ring thread sleeps on
// an eventfd whenever it finds nothing. Every push must be taken: a lost
// wake-up leaves the ring asleep and the test hangs (ctest's timeout).
TEST(CommitStack, NoPushIsLostAcrossSleeps) {
  constexpr uint32_t kProducers = 4;
  constexpr uint32_t kPerProducer = 20000;
  CommitStack s(kProducers);
  int wake = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  std::vector<std::atomic<bool>> owned_by_ring(kProducers);
  std::atomic<uint64_t> taken{0};
  std::thread ring([&] {
    uint64_t total = uint64_t{kProducers} * kPerProducer;
    while (taken.load() < total) {
      uint64_t n = 0;
      s.take_all([&](uint32_t e) {
        owned_by_ring[e].store(false, std::memory_order_release);
        ++n;
      });
      taken.fetch_add(n);
      if (n > 0 || taken.load() >= total) continue;
      if (!s.prepare_sleep()) continue;
      uint64_t v;
      ASSERT_EQ(::read(wake, &v, sizeof v), static_cast<ssize_t>(sizeof v));
      s.awake();
    }
  });
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint32_t i = 0; i < kPerProducer; ++i) {
        while (owned_by_ring[p].load(std::memory_order_acquire)) std::this_thread::yield();
        owned_by_ring[p].store(true, std::memory_order_relaxed);
        if (s.push(p)) {
          uint64_t one = 1;
          ASSERT_EQ(::write(wake, &one, sizeof one), static_cast<ssize_t>(sizeof one));
        }
      }
    });
  }
  for (std::thread& t : producers) t.join();
  ring.join();
  EXPECT_EQ(taken.load(), uint64_t{kProducers} * kPerProducer);
  ::close(wake);
}

}  // namespace
}  // namespace peregrine::fs
