// Internal to the algorithms that compute on several threads over kept
// lists (bfs, sssp, bc, PageRank, tc): a team of threads started once per
// run and handed one parallel loop after another. Delta-stepping and BFS
// run hundreds of short rounds; starting and joining a thread for each
// cost more than some rounds' work.
//
// Thread rules: the thread that made the team (its owner) calls
// for_each() and is the team's thread 0; helpers 1..size()-1 run only
// inside a for_each() and wait between them, spinning first (4000 pause
// instructions: some microseconds to some hundreds, by CPU; the next round
// usually follows at once), then asleep on a futex. A loop wakes only the
// helpers its chunks can keep busy. for_each() returns when every index is
// done and no helper touches fn any more, also when fn throws on the
// owner (the exception then goes on); a throw on a helper ends the
// program, as from any thread. Not for use from two threads at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace peregrine::graph::detail {

class ThreadTeam {
 public:
  // `threads` counts the owner; 1 starts no helper. Helpers the system
  // refuses to start are left out: size() says how many run.
  explicit ThreadTeam(uint32_t threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  uint32_t size() const { return static_cast<uint32_t>(helpers_.size()) + 1; }

  // fn(index, thread) for every index below `count`, taken `items` at a
  // time (kItems vertices: hubs and leaves mix; an index that is itself a
  // block of work: 1). With at most `items` indices the owner runs them
  // alone: waking a helper costs more than such a round.
  template <class Fn>
  void for_each(size_t count, const Fn& fn, size_t items = kItems) {
    if (count <= items || helpers_.empty()) {
      for (size_t i = 0; i < count; ++i) fn(i, 0);
      return;
    }
    // A call per chunk, not per index: fn stays inlined in the loop.
    run(count, items, &fn, [](const void* f, size_t from, size_t to, uint32_t t) {
      const Fn& each = *static_cast<const Fn*>(f);
      for (size_t i = from; i < to; ++i) each(i, t);
    });
  }

  static constexpr size_t kItems = 64;

 private:
  using Invoke = void (*)(const void* fn, size_t from, size_t to, uint32_t thread);
  void run(size_t count, size_t items, const void* fn, Invoke invoke);
  // Publishes a new round in which helpers 1..active take part.
  void start_round(uint32_t active);
  void take_items(uint32_t thread);
  void helper_main(uint32_t thread);

  // The loop being run: written by the owner before `round_` moves on,
  // read by helpers after they see it move (release/acquire on round_).
  const void* fn_ = nullptr;
  Invoke invoke_ = nullptr;
  size_t count_ = 0;
  size_t items_ = kItems;
  std::atomic<size_t> next_{0};
  // The round's number above kActiveBits, and below them how many helpers
  // (1..n) take part: one atomic, so a helper left out of a round, which
  // the owner does not wait for, never reads the next round's count.
  static constexpr int kActiveBits = 16;
  std::atomic<uint64_t> round_{0};     // a new value per for_each(); helpers wait on it
  std::atomic<uint32_t> running_{0};   // helpers taking part not yet done with the round
  std::atomic<bool> stopping_{false};  // set by the owner before the last change of round_
  std::vector<std::thread> helpers_;
};

// A value one thread of the team writes all through a loop (its part of
// the next frontier, its counts), alone on its cache lines: two threads'
// vector ends or counters in one line bounce it between their CPUs on
// every write.
template <class T>
struct alignas(64) Padded {
  T value{};
};

// A thread count of 0 means one per CPU.
inline uint32_t resolve_threads(uint32_t threads) {
  return threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace peregrine::graph::detail
