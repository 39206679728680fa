// LayoutFence: keeps a volume's IO off the stripe units an online restripe
// is moving (peregrine grow --add on a mounted volume; the Engine's
// restripe calls drive it). Internal to the engine.
//
// While the fence is active every read and write passes admit() before it
// is split (Submitter::add). One that touches the closed window, or any
// unit while the whole volume is closed (the restripe's start), is parked:
// the fence keeps it, untouched, until open() hands it back to be
// submitted again. One that touches a unit at or above the restripe's
// cursor (the units still in their old places) is registered until it
// completes: its completion callback is swapped for the fence's, which
// puts the caller's back, forgets the request and runs it. So the
// restripe can wait until no request it admitted before closing a window
// is still in flight there (wait_clear) before it moves the window's
// units, and a unit's place never changes under a request that mapped it.
// Flushes carry no units and pass.
//
// Thread rules: thread-safe. admit() on submitting threads, the
// completion on whichever thread completes the request; close(), open(),
// wait_clear() and set_active() on the restripe's thread. A parked or
// registered request's caller must not reuse it before its callback ran,
// as the engine's rule is anyway (request.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "peregrine/engine/request.h"
#include "peregrine/engine/stripe_map.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine {

class LayoutFence {
 public:
  explicit LayoutFence(const StripeMap& map) : map_(map) {}
  LayoutFence(const LayoutFence&) = delete;
  LayoutFence& operator=(const LayoutFence&) = delete;

  // Sequentially consistent: Engine::begin_restripe's start pairs it with
  // the submitters' SubmitterSlot::staged.
  bool active() const { return active_.load(); }
  void set_active(bool on) EXCLUDES(mu_);

  // A read or write of units [first, end) while active: false if the fence
  // parked it (open() hands it back), true if it may be submitted now.
  bool admit(Request& r, uint64_t first, uint64_t end) EXCLUDES(mu_);

  // Parks every request that touches [begin, end) from now on; `all`:
  // every request, whatever its units.
  void close(uint64_t begin, uint64_t end, bool all = false) EXCLUDES(mu_);
  // Waits until no registered request touching [begin, end) is in flight.
  void wait_clear(uint64_t begin, uint64_t end) EXCLUDES(mu_);
  // Opens what close() closed; returns the requests parked meanwhile, in
  // the order they came, for the caller to submit again.
  std::vector<Request*> open() EXCLUDES(mu_);

  // Registered requests in flight and parked requests, and the window
  // closed now ({0, 0}: none) (tests, statistics).
  size_t in_flight() const EXCLUDES(mu_);
  std::pair<uint64_t, uint64_t> closed_window() const EXCLUDES(mu_);
  size_t parked() const EXCLUDES(mu_);

 private:
  struct Registered {
    void (*on_complete)(Request&, int);
    void* context;
    uint64_t first, end;
  };
  static void complete(Request& r, int result);
  bool overlaps_registered(uint64_t begin, uint64_t end) const REQUIRES(mu_);

  const StripeMap& map_;
  std::atomic<bool> active_{false};
  mutable Mutex mu_;
  std::condition_variable cleared_;  // with mu_: a registered request completed
  bool closed_all_ GUARDED_BY(mu_) = false;
  uint64_t closed_begin_ GUARDED_BY(mu_) = 0;  // closed window, empty when equal
  uint64_t closed_end_ GUARDED_BY(mu_) = 0;
  std::unordered_map<Request*, Registered> registered_ GUARDED_BY(mu_);
  std::vector<Request*> parked_ GUARDED_BY(mu_);
};

}  // namespace peregrine
