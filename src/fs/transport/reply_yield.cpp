#include "reply_yield.h"

#include <pthread.h>

#include <thread>

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

void ReplyYield::start_on_this_thread(bool enabled) {
  usable_ = false;
  if (!enabled) return;
  policy_ = sched_getscheduler(0);
  if (policy_ != SCHED_OTHER && policy_ != SCHED_BATCH) return;
  if (sched_getparam(0, &param_) != 0) return;
  usable_ = true;
}

void ReplyYield::submit_idle(void (*submit)(void*), void* ctx) {
  sched_param idle{};
  if (sched_setscheduler(0, SCHED_IDLE, &idle) != 0) {
    submit(ctx);
    return;
  }
  submit(ctx);
  if (sched_setscheduler(0, policy_, &param_) != 0) usable_ = false;
}

}  // namespace peregrine::fs
