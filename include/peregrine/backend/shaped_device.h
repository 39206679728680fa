// ShapedDevice: makes a member (typically a tmpfs file) behave like an SSD
// with a given latency, internal queue depth, IOPS cap and bandwidth cap,
// for tests and benchmarks. Every IO still goes to the real member through
// the wrapped UringDevice; the shaper only holds each completion back until
// the modelled device would have finished it, by bounding the drive
// thread's next sleep (prepare_sleep's deadline), so it burns no CPU while
// waiting.
//
// Model: an IO enters the device when fewer than `queue_depth` are inside
// (otherwise it waits in the device's FIFO); ShapeModel says when it
// completes (latency, IOPS and bandwidth caps). A slot frees at its IO's
// modelled completion, not when the drive thread gets round to reaping it:
// a real drive takes its next command from its queue without waiting for
// the host, so a late reap must not slow the modelled drive down.
//
// Thread rules: see DeviceQueue.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <vector>

#include "peregrine/backend/device_queue.h"
#include "peregrine/backend/shape_model.h"
#include "peregrine/backend/uring_device.h"

namespace peregrine {

class ShapedDevice final : public DeviceQueue {
 public:
  ShapedDevice(std::unique_ptr<UringDevice> inner, ShapeParams shape, uint32_t capacity);

  void start(const DeviceIo& io) override;
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override;
  Status attach_waker(CompletionWaker& waker) override { return inner_->attach_waker(waker); }
  bool prepare_sleep(uint64_t& deadline_ns) override;
  bool has_ready() const override { return inner_->has_ready(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;

 private:
  struct Held {
    uint64_t release_ns;
    DeviceCompletion completion;
    bool operator>(const Held& o) const { return release_ns > o.release_ns; }
  };

  struct Waiting {
    DeviceIo io;
    uint64_t arrival_ns;
  };

  // `at`: when, in the model, the IO entered the device.
  void admit(const DeviceIo& io, uint64_t at);
  // Waiting IOs enter free slots: a slot freed at `freed_ns` takes the
  // oldest waiting IO from then, or from its arrival if later.
  void admit_waiting(uint64_t freed_ns);
  // Holds what the inner device reported (`got` in scratch_), then hands
  // out what is due.
  size_t release_due(size_t got, std::span<DeviceCompletion> out);

  std::unique_ptr<UringDevice> inner_;
  ShapeModel model_;
  uint32_t inside_ = 0;                   // IOs admitted and not yet released
  std::vector<uint64_t> release_by_tag_;  // modelled completion time per tag
  std::deque<Waiting> waiting_;           // device-internal FIFO when full
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> held_;
  std::vector<DeviceCompletion> scratch_;
};

}  // namespace peregrine
