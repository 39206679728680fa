#include "peregrine/fs/read_turn.h"

#include "peregrine/fs/lone_caller_follow.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace peregrine::fs {
namespace {

thread_local ReadTurn* tls_held = nullptr;

}  // namespace

// A semaphore: each wake-up lets one waiter's read() return. One that finds
// no waiter stays counted and ends the next wait at once, which costs that
// worker one more look at the queue and loses nothing.
// Non-blocking, waited for in poll(): a wait with a timeout must not block
// in read() when another waiter took the count poll() saw.
ReadTurn::ReadTurn() : wake_fd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK)) {}

ReadTurn::~ReadTurn() {
  if (tls_held == this) tls_held = nullptr;
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool ReadTurn::held_here() const { return tls_held == this; }

bool ReadTurn::try_take() {
  if (tls_held == this) return true;
  if (taken_.exchange(true)) return false;
  tls_held = this;
  return true;
}

void ReadTurn::leave() {
  if (tls_held != this) return;
  tls_held = nullptr;
  // Pairs with wait(): either the waiter's exchange sees the turn free, or
  // this load sees the waiter counted and wakes it.
  taken_.store(false);
  if (waiting_.load() != 0) wake_one();
}

void ReadTurn::call_help(int fd) {
  if (waiting_.load() == 0) return;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0 || (p.revents & POLLIN) == 0) return;
  helps_.fetch_add(1, std::memory_order_relaxed);
  wake_one();
}

bool ReadTurn::note_holder_read(bool quiet) {
  if (!quiet) {
    quiet_reads_.store(0, std::memory_order_relaxed);
    return false;
  }
  uint32_t n = quiet_reads_.load(std::memory_order_relaxed) + 1;
  if (n < kQuietReadsToFree) {
    quiet_reads_.store(n, std::memory_order_relaxed);
    return false;
  }
  quiet_reads_.store(0, std::memory_order_relaxed);
  go_quiet();
  return true;
}

bool ReadTurn::free_if_only_lone() {
  if (!busy_.load(std::memory_order_relaxed) || io_busy_.load()) return false;
  quiet_reads_.store(0, std::memory_order_relaxed);
  go_quiet();
  return true;
}

void ReadTurn::go_quiet() {
  // A worker's note_busy() racing this only makes the volume quiet for as
  // long as the next reader takes to find the IO again.
  io_busy_.store(false);
  // Pairs with wait(): either a waiter's load sees the volume quiet, or
  // this load sees it counted and wakes it.
  busy_.store(false);
  leave();
  wake(waiting_.load());
}

ReadTurn::Woken ReadTurn::wait(int timeout_ms) {
  waiting_.fetch_add(1);
  if (!busy_.load()) {
    waiting_.fetch_sub(1);
    return Woken::quiet;
  }
  if (try_take()) {
    waiting_.fetch_sub(1);
    return Woken::took_turn;
  }
  for (;;) {
    pollfd p{wake_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) {
      waiting_.fetch_sub(1);
      return Woken::by_signal;
    }
    if (ready == 0) {
      waiting_.fetch_sub(1);
      return Woken::timed_out;
    }
    if (ready < 0) break;  // judged below as a wake-up: the worker looks at the queue
    uint64_t v = 0;
    // EAGAIN: another waiter took the wake-up poll() saw.
    if (::read(wake_fd_, &v, sizeof v) >= 0 || errno != EAGAIN) break;
  }
  waiting_.fetch_sub(1);
  if (!busy_.load()) return Woken::quiet;
  return try_take() ? Woken::took_turn : Woken::to_help;
}

void ReadTurn::wake_one() { wake(1); }

void ReadTurn::wake(uint64_t n) {
  if (n == 0) return;
  // Cannot fail short of a bad descriptor: the counter is far from full.
  [[maybe_unused]] ssize_t w = ::write(wake_fd_, &n, sizeof n);
}

void ReadTurn::leave_held_turn() {
  // About to wait mid-request: a follower waits at its own policy, and
  // the next holder follows instead.
  LoneCallerFollow::release_on_this_thread();
  if (tls_held != nullptr) tls_held->leave();
}

}  // namespace peregrine::fs
