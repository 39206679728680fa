// VolatileCacheDevice (tests only): makes a member behave, at a power cut,
// like a drive with a volatile write cache. It wraps a DeviceQueue and
// keeps an undo log beside the volume: before each write goes to the
// member, the bytes it replaces; as writes complete, their order; when a
// flush completes, which completed writes it made durable (every write that
// completed before the flush started, as a drive's cache flush does).
// After the daemon dies (kill -9, or at a chosen write or flush: `kill_at_io`),
// apply_power_cut() replays the log backwards over the member files: each
// write no flush covered is independently kept, lost (its old bytes put
// back) or torn (kept up to a 512-byte or 4 KiB boundary), from a seed.
// The member files then hold what the drives could hold after losing
// power.
//
// Log records: UndoRecord headers, a write's followed by its old bytes.
// The log is truncated when the device opens: what the members hold at
// mount is the baseline.
//
// A flush or write the engine makes on a waiting thread (flush_blocking,
// transfer_blocking, when the member beneath does them that way) is logged
// and cut at like one through start().
//
// Thread rules: the device follows DeviceQueue's (one holder of the
// drive's dispatch lock at a time), except flush_blocking() and
// transfer_blocking(), which run without that lock: the log and the completion count are guarded by the
// device's own mutex. The write counter for kill_at_io is shared by the
// members' devices and atomic.
// apply_power_cut() runs in a test, with no daemon on the members.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "peregrine/backend/device_queue.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"
#include "peregrine/util/result.h"

namespace peregrine {

struct UndoRecord {
  static constexpr uint32_t kMagic = 0x50435554;  // "PCUT"
  enum Kind : uint32_t { write = 1, completed = 2, flushed = 3 };
  uint32_t magic = kMagic;
  uint32_t kind = write;
  // write, completed: the write's sequence number (start order).
  // flushed: every write whose completion index is at most `seq` is durable.
  uint64_t seq = 0;
  uint64_t offset = 0;  // write: member byte offset
  uint64_t length = 0;  // write: bytes of old data that follow
                        // completed: the completion index (1, 2, ...)
};

struct PowerCutPlan {
  std::string log_path;  // this member's undo log
  // Kill the daemon (SIGKILL) when the volume's nth write or flush starts
  // (counted over every member sharing `ios`), before it reaches the
  // member; 0 = never.
  uint64_t kill_at_io = 0;
  std::shared_ptr<std::atomic<uint64_t>> ios;
};

class VolatileCacheDevice final : public DeviceQueue {
 public:
  // `member_fd` is the member (for reading the bytes a write replaces).
  static Expected<std::unique_ptr<DeviceQueue>> create(std::unique_ptr<DeviceQueue> inner, int member_fd,
                                                       PowerCutPlan plan);
  ~VolatileCacheDevice() override;

  void start(const DeviceIo& io) override;
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override;
  Status attach_waker(CompletionWaker& waker) override { return inner_->attach_waker(waker); }
  bool prepare_sleep(uint64_t& deadline_ns) override { return inner_->prepare_sleep(deadline_ns); }
  bool has_ready() const override { return inner_->has_ready(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;
  bool flushes_blocking() const override { return inner_->flushes_blocking(); }
  int flush_blocking() override;
  bool transfers_blocking() const override { return inner_->transfers_blocking(); }
  int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) override;

 private:
  VolatileCacheDevice(std::unique_ptr<DeviceQueue> inner, int read_fd, int log_fd, PowerCutPlan plan);
  struct Started {
    IoOp op;
    uint64_t seq;  // write: its sequence number; flush: completions it covers
  };
  void append(const UndoRecord& r, const void* data = nullptr) REQUIRES(mu_);
  // A write's record with the bytes it replaces (its sequence number), and
  // its completion, in start()/reap() and transfer_blocking() alike.
  uint64_t log_write_started(uint64_t offset, uint64_t len) REQUIRES(mu_);
  void log_write_completed(uint64_t seq) REQUIRES(mu_);
  void note_completions(std::span<DeviceCompletion> done) EXCLUDES(mu_);
  // The cut, if this write or flush is the volume's kill_at_io-th.
  void cut_if_due();

  std::unique_ptr<DeviceQueue> inner_;
  int read_fd_;
  int log_fd_;
  PowerCutPlan plan_;
  Mutex mu_;
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  uint64_t completions_ GUARDED_BY(mu_) = 0;
  std::unordered_map<uint32_t, Started> started_ GUARDED_BY(mu_);  // by tag
  std::vector<std::byte> old_ GUARDED_BY(mu_);
};

struct PowerCutOutcome {
  uint64_t pending = 0;  // writes no flush covered
  uint64_t kept = 0, lost = 0, torn = 0;
};

// Applies a power cut to one member file from its undo log (see above).
// Errors name the log or the member.
Expected<PowerCutOutcome> apply_power_cut(const std::string& member_path, const std::string& log_path,
                                          uint64_t seed);

}  // namespace peregrine
