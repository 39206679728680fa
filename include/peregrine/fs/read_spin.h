// ReadSpin: how long a classic worker that found no request waiting looks
// for the next one before it sleeps in read() (fuse.read_spin_us), or, on
// the io-uring transport, a ring thread after a run of rounds of one
// O_DIRECT read or write each before it sleeps in io_uring_enter()
// (fuse_ring.cpp).
//
// Why: a program that makes one request after another (tar creating
// files, reading small ones, stat) sleeps in the kernel while a worker
// answers, and the worker sleeps while the program prepares its next
// request. Each sleep ends in a wake-up, and on a virtual machine whose
// idle vCPUs halt a wake-up costs 10 us or more: two per request, against
// 2-5 us of work. A worker that looks for the next request for a few tens
// of microseconds first takes it without being woken. Measured on 2 vCPUs,
// disk members, classic transport: unpacking /usr/include 11.1 s -> 5.3 s,
// reading every file of it 7.7 -> 4.5 s, 4 KiB O_DIRECT reads at QD 1 on
// tmpfs members +12-16% (docs/performance-history.md). The spinning worker
// calls sched_yield() between looks, so that the caller its reply woke, or
// a drive thread, runs at once if it shares the CPU: without that, QD 1
// reads lost 10%.
//
// On io-uring, with tmpfs members on 2 vCPUs, 4 KiB O_DIRECT writes at
// QD 1 went from 33K/s to 72K/s, reads from 66K to 77K (docs/transport.md).
//
// Only one worker spins at a time (the others sleep in read() as before),
// and the window adapts much as the guest haltpoll governor's does: it
// starts at 0; a worker that slept and was given a request within the
// limit of its starting to wait doubles it (at least kGrowStartNs, at most
// the limit). Waits longer than the limit halve it (to 0 below
// kGrowStartNs), but only from the kLongWaitsToShrink-th in a row on: a
// walk of a tree (ls -lR) makes an occasional long pause between runs of
// close requests, and halving at every pause, as haltpoll does, kept the
// window too short to catch them (walk 2.9 s against 1.6 at a fixed 50 us).
// So a volume whose requests come further apart than the limit, or not at
// all, soon has no worker spinning; the cost is a CPU kept busy for up to
// the window after each request while they come closer together.
//
// Thread rules: shared by the session's workers (or rings); every member
// is atomic.
// The window is a hint: racing adjustments lose nothing but precision.
#pragma once

#include <atomic>
#include <cstdint>

namespace peregrine::fs {

class ReadSpin {
 public:
  static constexpr uint64_t kGrowStartNs = 10'000;
  static constexpr uint32_t kLongWaitsToShrink = 4;

  // The longest window, 0 to never spin. Set before the workers start.
  void set_limit_ns(uint64_t ns) { limit_ns_.store(ns, std::memory_order_relaxed); }
  uint64_t limit_ns() const { return limit_ns_.load(std::memory_order_relaxed); }

  // Takes the one spinner's place for the calling worker: false when
  // spinning is off or another worker holds it.
  bool try_begin();
  // How long the holder spins now (may be 0: it then only measures its wait).
  uint64_t window_ns() const { return window_ns_.load(std::memory_order_relaxed); }
  // The holder's spin found a request: the place is let go of.
  void found();
  // The holder's spin found none (or the descriptor failed): the place is
  // let go of and the worker sleeps until a request comes.
  void missed();
  // The holder stops looking for something other than a request (a ring
  // thread's reply from another thread): the place is let go of, and
  // nothing is counted or adapted.
  void let_go() { spinning_.store(false, std::memory_order_release); }
  // The worker that missed was given a request `waited_ns` after it began
  // to look: the window adapts.
  void adapt(uint64_t waited_ns);

  // For statistics and tests.
  uint64_t requests_found() const { return found_.load(std::memory_order_relaxed); }
  uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> limit_ns_{0};
  std::atomic<uint64_t> window_ns_{0};
  std::atomic<uint32_t> long_waits_{0};  // in a row
  std::atomic<bool> spinning_{false};
  std::atomic<uint64_t> found_{0};
  std::atomic<uint64_t> sleeps_{0};
};

}  // namespace peregrine::fs
