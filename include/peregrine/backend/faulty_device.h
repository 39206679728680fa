// FaultInjectingDevice: wraps a DeviceQueue and makes chosen IOs fail or
// come back short, so tests can check how the engine handles a failing
// drive. Rules are matched in order against each started IO.
//
// Thread rules: the FaultPlan is fixed before the engine starts; the
// device follows DeviceQueue's rules.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "peregrine/backend/device_queue.h"

namespace peregrine {

struct FaultRule {
  enum class Action { fail, short_transfer };
  Action action = Action::fail;
  int errnum = 5;  // EIO; used by `fail`
  // Which IOs: the nth IO started on this member (1-based, 0 = any) ...
  uint64_t nth = 0;
  // ... and/or an IO overlapping [range_begin, range_end) of the member.
  uint64_t range_begin = 0;
  uint64_t range_end = 0;  // 0 = no range condition
  std::optional<IoOp> op;  // only this direction
  uint32_t times = 1;      // how many IOs the rule hits; 0 = every match
};

struct FaultPlan {
  std::vector<FaultRule> rules;
};

class FaultInjectingDevice final : public DeviceQueue {
 public:
  FaultInjectingDevice(std::unique_ptr<DeviceQueue> inner, FaultPlan plan);

  void start(const DeviceIo& io) override;
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override;
  bool prepare_sleep() override { return failed_.empty() && inner_->prepare_sleep(); }
  bool has_ready() const override { return !failed_.empty() || inner_->has_ready(); }
  void sleep() override { inner_->sleep(); }
  void wake() override { inner_->wake(); }

 private:
  FaultRule* match(const DeviceIo& io, uint64_t bytes);

  std::unique_ptr<DeviceQueue> inner_;
  FaultPlan plan_;
  std::vector<uint32_t> hits_;
  uint64_t started_ = 0;
  std::vector<DeviceCompletion> failed_;  // synthesized, reported by the next reap
  std::vector<std::vector<iovec>> short_iov_;  // per tag: a shortened IO's iovecs, alive until it completes
};

}  // namespace peregrine
