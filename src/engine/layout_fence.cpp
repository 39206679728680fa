#include "layout_fence.h"

namespace peregrine {

void LayoutFence::set_active(bool on) {
  MutexLock lock(mu_);
  active_.store(on);
}

bool LayoutFence::admit(Request& r, uint64_t first, uint64_t end) {
  MutexLock lock(mu_);
  if (closed_all_ || (first < closed_end_ && closed_begin_ < end)) {
    parked_.push_back(&r);
    return false;
  }
  // Units below the cursor are in their new places for good: only a
  // request that reaches a unit still to move is waited for.
  if (end > map_.restripe_cursor() && map_.restriping()) {
    registered_.emplace(&r, Registered{r.on_complete, r.context, first, end});
    r.on_complete = &LayoutFence::complete;
    r.context = this;
  }
  return true;
}

void LayoutFence::complete(Request& r, int result) {
  auto* fence = static_cast<LayoutFence*>(r.context);
  void (*callback)(Request&, int) = nullptr;
  {
    MutexLock lock(fence->mu_);
    auto it = fence->registered_.find(&r);
    // Always found: only admit() installs this callback.
    callback = it->second.on_complete;
    r.on_complete = callback;
    r.context = it->second.context;
    fence->registered_.erase(it);
  }
  fence->cleared_.notify_all();
  callback(r, result);
}

void LayoutFence::close(uint64_t begin, uint64_t end, bool all) {
  MutexLock lock(mu_);
  closed_all_ = all;
  closed_begin_ = begin;
  closed_end_ = end;
}

bool LayoutFence::overlaps_registered(uint64_t begin, uint64_t end) const {
  for (const auto& [request, reg] : registered_)
    if (reg.first < end && begin < reg.end) return true;
  return false;
}

void LayoutFence::wait_clear(uint64_t begin, uint64_t end) {
  MutexLock lock(mu_);
  lock.wait(cleared_, [&] {
    mu_.assert_held();
    return !overlaps_registered(begin, end);
  });
}

std::vector<Request*> LayoutFence::open() {
  MutexLock lock(mu_);
  closed_all_ = false;
  closed_begin_ = closed_end_ = 0;
  std::vector<Request*> out;
  out.swap(parked_);
  return out;
}

size_t LayoutFence::in_flight() const {
  MutexLock lock(mu_);
  return registered_.size();
}

std::pair<uint64_t, uint64_t> LayoutFence::closed_window() const {
  MutexLock lock(mu_);
  return {closed_begin_, closed_end_};
}

size_t LayoutFence::parked() const {
  MutexLock lock(mu_);
  return parked_.size();
}

}  // namespace peregrine
