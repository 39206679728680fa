// SharedDevice: a DeviceQueue that forwards every call to a device held by
// shared_ptr, so that a layer the engine's drive uses (the power-cut layer,
// tests only) can also take the daemon's own writes to that member
// (MemberFile::route_writes_through) and log them in the same undo log.
//
// Thread rules: those of the device it forwards to.
#pragma once

#include <memory>
#include <utility>

#include "peregrine/backend/device_queue.h"

namespace peregrine {

class SharedDevice final : public DeviceQueue {
 public:
  explicit SharedDevice(std::shared_ptr<DeviceQueue> device) : device_(std::move(device)) {}

  void start(const DeviceIo& io) override { device_->start(io); }
  void submit() override { device_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override { return device_->reap(out); }
  Status attach_waker(CompletionWaker& waker) override { return device_->attach_waker(waker); }
  bool prepare_sleep(uint64_t& deadline_ns) override { return device_->prepare_sleep(deadline_ns); }
  bool has_ready() const override { return device_->has_ready(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override { return device_->reap_finished_inline(out); }
  bool flushes_blocking() const override { return device_->flushes_blocking(); }
  int flush_blocking() override { return device_->flush_blocking(); }
  bool transfers_blocking() const override { return device_->transfers_blocking(); }
  bool copies_inline() const override { return device_->copies_inline(); }
  int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) override {
    return device_->transfer_blocking(op, offset, buf, len);
  }

 private:
  const std::shared_ptr<DeviceQueue> device_;
};

}  // namespace peregrine
