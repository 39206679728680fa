// FaultInjectingDevice: wraps a DeviceQueue and makes chosen IOs fail, come
// back short, or stall, so tests can check how the engine and the daemon
// handle a failing drive. Rules are matched in order against each started
// IO.
//
// A rule may be armed by a file (`armed_while`): it applies only while that
// file exists, so a test switches a fault on and off from outside the
// process (touch / rm) without timing. A `hold` rule keeps the IOs it
// matches on the device, neither started nor completed — a stalled drive —
// until its file is removed; then they are started as if just issued. A
// watcher thread (inotify on the file's directory) wakes the drive thread
// when that happens, so nothing polls.
//
// Thread rules: the FaultPlan is fixed before the engine starts; the
// device follows DeviceQueue's rules. The watcher thread only wakes the
// attached CompletionWaker, which is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "peregrine/backend/device_queue.h"

namespace peregrine {

struct FaultRule {
  enum class Action {
    fail,            // complete with -errnum
    short_transfer,  // move only the first half (whole blocks)
    hold,            // stall until `armed_while` is removed (requires it)
  };
  Action action = Action::fail;
  int errnum = 5;  // EIO; used by `fail`
  // Which IOs: the nth IO started on this member (1-based, 0 = any) ...
  uint64_t nth = 0;
  // ... and/or an IO overlapping [range_begin, range_end) of the member.
  uint64_t range_begin = 0;
  uint64_t range_end = 0;  // 0 = no range condition
  std::optional<IoOp> op;  // only this direction
  uint32_t times = 1;      // how many IOs the rule hits; 0 = every match
  // Applies only while this file exists ("" = always).
  std::string armed_while;
};

struct FaultPlan {
  std::vector<FaultRule> rules;
};

class FaultInjectingDevice final : public DeviceQueue {
 public:
  FaultInjectingDevice(std::unique_ptr<DeviceQueue> inner, FaultPlan plan);
  ~FaultInjectingDevice() override;

  void start(const DeviceIo& io) override;
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override;
  Status attach_waker(CompletionWaker& waker) override;
  bool prepare_sleep(uint64_t& deadline_ns) override;
  bool has_ready() const override { return !failed_.empty() || inner_->has_ready(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;

 private:
  struct Held {
    DeviceIo io;
    const FaultRule* rule;
  };

  FaultRule* match(const DeviceIo& io, uint64_t bytes);
  // Starts (and submits) every held IO whose rule is no longer armed;
  // true if it started any.
  bool release_held();
  // release_held(), then hands out the synthesized failures.
  size_t take_failed(std::span<DeviceCompletion> out);
  void watch();

  std::unique_ptr<DeviceQueue> inner_;
  FaultPlan plan_;
  std::vector<uint32_t> hits_;
  uint64_t started_ = 0;
  std::vector<DeviceCompletion> failed_;          // synthesized, reported by the next reap
  std::vector<std::vector<iovec>> short_iov_;     // per tag: a shortened IO's iovecs, alive until it completes
  std::vector<Held> held_;                        // stalled IOs, in start order
  std::atomic<CompletionWaker*> waker_{nullptr};  // read by the watcher
  int stop_fd_ = -1;                              // eventfd: ends the watcher
  std::thread watcher_;
};

}  // namespace peregrine
