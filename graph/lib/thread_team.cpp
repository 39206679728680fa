#include "thread_team.h"

#include <exception>
#include <new>
#include <system_error>

namespace peregrine::graph::detail {
namespace {

// Checks of the round counter before a waiting helper (or the owner,
// waiting for helpers) sleeps: longer than most gaps between rounds, short
// beside a futex round trip at every round.
constexpr int kSpins = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadTeam::ThreadTeam(uint32_t threads) {
  threads = std::min<uint32_t>(threads, (1u << kActiveBits) - 1);
  helpers_.reserve(threads);
  for (uint32_t t = 1; t < threads; ++t) {
    // A helper the system will not start (a process or memory limit) makes
    // the team smaller, not the program end: the helpers already started
    // would be joinable threads destroyed by the unwinding, which
    // terminates. Fewer threads give the same results, later.
    try {
      helpers_.emplace_back([this, t] { helper_main(t); });
    } catch (const std::system_error&) {
      break;
    } catch (const std::bad_alloc&) {
      break;
    }
  }
}

ThreadTeam::~ThreadTeam() {
  stopping_.store(true, std::memory_order_relaxed);
  start_round(0);
  for (std::thread& h : helpers_) h.join();
}

void ThreadTeam::start_round(uint32_t active) {
  // The owner alone writes round_: a load and a store are enough.
  const uint64_t number = (round_.load(std::memory_order_relaxed) >> kActiveBits) + 1;
  round_.store((number << kActiveBits) | active, std::memory_order_release);
  round_.notify_all();
}

void ThreadTeam::take_items(uint32_t thread) {
  for (;;) {
    const size_t from = next_.fetch_add(items_, std::memory_order_relaxed);
    if (from >= count_) return;
    invoke_(fn_, from, std::min(from + items_, count_), thread);
  }
}

void ThreadTeam::run(size_t count, size_t items, const void* fn, Invoke invoke) {
  fn_ = fn;
  invoke_ = invoke;
  count_ = count;
  items_ = items;
  next_.store(0, std::memory_order_relaxed);
  // The owner takes a chunk too: one helper per further chunk at most.
  const size_t chunks = (count + items - 1) / items;
  const auto active = static_cast<uint32_t>(std::min<size_t>(helpers_.size(), chunks - 1));
  running_.store(active, std::memory_order_relaxed);
  start_round(active);
  std::exception_ptr thrown;
  try {
    take_items(0);
  } catch (...) {
    // The helpers still hold fn: no more chunks for anyone, wait for theirs.
    next_.store(count_, std::memory_order_relaxed);
    thrown = std::current_exception();
  }
  int spins = 0;
  for (uint32_t left; (left = running_.load(std::memory_order_acquire)) != 0;) {
    if (spins++ < kSpins)
      cpu_relax();
    else
      running_.wait(left, std::memory_order_acquire);
  }
  if (thrown) std::rethrow_exception(thrown);
}

void ThreadTeam::helper_main(uint32_t thread) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t now;
    while ((now = round_.load(std::memory_order_acquire)) == seen) {
      if (spins++ < kSpins)
        cpu_relax();
      else
        round_.wait(seen, std::memory_order_acquire);
    }
    seen = now;
    if (stopping_.load(std::memory_order_relaxed)) return;
    const uint64_t active = now & ((uint64_t{1} << kActiveBits) - 1);
    if (thread > active) continue;  // not needed this round: not counted in running_
    take_items(thread);
    if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) running_.notify_one();
  }
}

}  // namespace peregrine::graph::detail
