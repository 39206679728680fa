// CommitStack: how replies made on other threads (drive threads, the
// blocking-op threads) reach a ring thread, which alone may submit their
// commits. A lock-free stack of entry indices: producers push, the ring
// thread takes the whole stack at once (so no ABA), and a producer wakes
// the ring thread only when it has said it is about to sleep.
//
// The wake protocol: the ring thread calls prepare_sleep(); if it returns
// true it may block until woken, and must call awake() when it runs again.
// push() returns true when the pusher must wake it (at most one pusher does
// per sleep). seq_cst on both sides makes it a Dekker pair: either the ring
// thread sees the push before it sleeps, or the pusher sees it sleeping.
//
// Thread rules: push() from any thread; take_all(), prepare_sleep() and
// awake() from the owning ring thread only. An entry is pushed at most once
// until taken (it belongs to the one request being answered).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace peregrine::fs {

class CommitStack {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit CommitStack(uint32_t entries) : next_(std::make_unique<std::atomic<uint32_t>[]>(entries)) {}

  // Returns whether the caller must wake the ring thread.
  bool push(uint32_t entry) {
    uint32_t head = head_.load();
    do {
      next_[entry].store(head, std::memory_order_relaxed);
    } while (!head_.compare_exchange_weak(head, entry));
    return sleeping_.load() && sleeping_.exchange(false);
  }

  // Calls fn(entry) for every pushed entry, newest first.
  template <typename Fn>
  void take_all(Fn&& fn) {
    uint32_t e = head_.exchange(kNone);
    while (e != kNone) {
      uint32_t next = next_[e].load(std::memory_order_relaxed);
      fn(e);
      e = next;
    }
  }

  // True: nothing is pushed, and the next push will ask for a wake-up.
  bool prepare_sleep() {
    sleeping_.store(true);
    if (head_.load() == kNone) return true;
    sleeping_.store(false);
    return false;
  }
  void awake() { sleeping_.store(false); }
  // Whether anything is pushed (any thread; a hint, as it may change).
  bool has_pushed() const { return head_.load(std::memory_order_relaxed) != kNone; }

 private:
  std::unique_ptr<std::atomic<uint32_t>[]> next_;
  std::atomic<uint32_t> head_{kNone};
  std::atomic<bool> sleeping_{false};
};

}  // namespace peregrine::fs
