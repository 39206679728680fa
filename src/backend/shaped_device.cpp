#include "peregrine/backend/shaped_device.h"

#include <algorithm>

#include "peregrine/util/clock.h"

namespace peregrine {
namespace {

uint64_t io_bytes(const DeviceIo& io) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < io.iovcnt; ++i) bytes += io.iov[i].iov_len;
  return bytes;
}

}  // namespace

ShapedDevice::ShapedDevice(std::unique_ptr<UringDevice> inner, ShapeParams shape, uint32_t capacity)
    : inner_(std::move(inner)), model_(shape), release_by_tag_(capacity, 0), scratch_(capacity) {}

void ShapedDevice::start(const DeviceIo& io) {
  uint64_t now = monotonic_ns();
  if (model_.params().queue_depth != 0 && inside_ >= model_.params().queue_depth) {
    waiting_.push_back(Waiting{io, now});
    return;
  }
  admit(io, now);
}

void ShapedDevice::admit(const DeviceIo& io, uint64_t at) {
  ++inside_;
  release_by_tag_[io.tag] = model_.admit(at, io_bytes(io));
  // The real IO runs now; only its completion is held back.
  inner_->start(io);
}

void ShapedDevice::admit_waiting(uint64_t freed_ns) {
  while (!waiting_.empty() && (model_.params().queue_depth == 0 || inside_ < model_.params().queue_depth)) {
    admit(waiting_.front().io, std::max(freed_ns, waiting_.front().arrival_ns));
    waiting_.pop_front();
  }
}

size_t ShapedDevice::reap(std::span<DeviceCompletion> out) { return release_due(inner_->reap(scratch_), out); }

size_t ShapedDevice::reap_finished_inline(std::span<DeviceCompletion> out) {
  return release_due(inner_->reap_finished_inline(scratch_), out);
}

size_t ShapedDevice::release_due(size_t got, std::span<DeviceCompletion> out) {
  for (size_t i = 0; i < got; ++i) {
    held_.push(Held{release_by_tag_[scratch_[i].tag], scratch_[i]});
  }
  uint64_t now = monotonic_ns();
  size_t n = 0;
  while (n < out.size() && !held_.empty() && held_.top().release_ns <= now) {
    uint64_t freed = held_.top().release_ns;
    out[n++] = held_.top().completion;
    held_.pop();
    --inside_;
    admit_waiting(freed);
  }
  return n;
}

bool ShapedDevice::prepare_sleep(uint64_t& deadline_ns) {
  if (!inner_->prepare_sleep(deadline_ns)) return false;
  if (held_.empty()) return true;
  uint64_t due = held_.top().release_ns;
  if (due <= monotonic_ns()) return false;
  if (deadline_ns == 0 || due < deadline_ns) deadline_ns = due;
  return true;
}

}  // namespace peregrine
