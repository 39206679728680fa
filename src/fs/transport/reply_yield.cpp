#include "reply_yield.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "peregrine/util/clock.h"

namespace peregrine::fs {

bool ReplyYield::permitted() {
  static const bool ok = [] {
    bool result = false;
    // A thread of its own: if going back failed, only it stays lowered.
    std::thread probe([&result] {
      int policy = sched_getscheduler(0);
      sched_param param{};
      if (policy < 0 || sched_getparam(0, &param) != 0) return;
      sched_param idle{};
      if (sched_setscheduler(0, SCHED_IDLE, &idle) != 0) return;
      result = sched_setscheduler(0, policy, &param) == 0;
    });
    probe.join();
    return result;
  }();
  return ok;
}

ReplyYield::Outcome ReplyYield::submit_idle(void (*submit)(void*), void* ctx) {
  // Read each time: an administrator may have changed it (chrt).
  const int policy = sched_getscheduler(0);
  sched_param none{};  // SCHED_OTHER and SCHED_BATCH take priority 0; nice is kept
  if ((policy != SCHED_OTHER && policy != SCHED_BATCH) || sched_setscheduler(0, SCHED_IDLE, &none) != 0) {
    submit(ctx);
    return Outcome::not_lowered;
  }
  const uint64_t start = monotonic_ns();
  submit(ctx);
  if (sched_setscheduler(0, policy, &none) != 0) {
    enabled_ = false;
    return Outcome::stuck;
  }
  const uint64_t end = monotonic_ns();
  if (end - start > kStallNs) {
    backed_off_until_ns_ = end + back_off_ns_;
    back_off_ns_ = std::min(2 * back_off_ns_, kMaxBackOffNs);
    return Outcome::stalled;
  }
  back_off_ns_ = std::max(back_off_ns_ / 2, kMinBackOffNs);
  return Outcome::lowered;
}

}  // namespace peregrine::fs
