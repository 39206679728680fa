// MirrorDevice: a member being replaced while the volume is mounted (online
// `peregrine replace`). It stands where the old member's device stood and
// holds two devices: the old member's (the primary) and the new member's
// (the secondary). While the copy runs, reads go to the primary, every write
// goes to both and completes once both have it, and flushes go to the
// primary (the volume's truth until the switch) and, once the copy is
// complete, to both. After the switch everything goes to the secondary; a
// replace that gives up goes back to the primary alone. The side no longer
// used is closed (retired) once nothing of its is in flight.
//
// The copy and the writes meet in a MirrorFence: the copier fences the range
// it is about to copy, waits until no write to it is in flight, copies it,
// and releases it. A write through the ring to a fenced range is held in the
// device until the release. A blocking write (the calling thread's own,
// e.g. a journal commit) never waits: it marks the fence dirty, and the
// copier copies the range again once it is done. So no copy of old bytes
// overtakes a newer write on the new member, and no thread waits on the
// copy (a blocked writer could hold a lock a drive thread's callback needs
// before it reaps the completion the copier waits for).
//
// Thread rules: MirrorDevice follows DeviceQueue's (its ring calls under the
// drive's dispatch lock; the blocking calls from any thread). MirrorFence is
// thread-safe: the copier calls fence/release/set_mode from its own thread,
// the device calls the rest under the dispatch lock or from blocking IO
// threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "peregrine/backend/device_queue.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine {

class CompletionWaker;

enum class MirrorMode : uint8_t {
  mirroring,       // reads: primary; writes: both
  primary_only,    // the replace gave up: the old member alone, as before it
  secondary_only,  // switched: the new member alone
};

class MirrorFence {
 public:
  // Copier: from now on writes overlapping [begin, end) wait; returns once
  // no write overlapping it is in flight on either side.
  void fence(uint64_t begin, uint64_t end) EXCLUDES(mu_);
  // Copier: lets the held writes go (and wakes the drive thread for them).
  // True if a blocking write reached the range while it was fenced: copy
  // it again (under a new fence).
  bool release() EXCLUDES(mu_);
  // Copier: the copy is complete and the new member synced once after this:
  // from now on flushes reach both members.
  void flush_both() EXCLUDES(mu_);
  // Copier: mirroring -> secondary_only (switched) or primary_only (gave up).
  // Releases any fence.
  void set_mode(MirrorMode mode) EXCLUDES(mu_);
  // Copier: waits until the side the mode no longer uses is closed.
  void wait_retired() EXCLUDES(mu_);
  // The first error a write to the new member got (0: none); the copier
  // gives up on it.
  int secondary_error() const { return secondary_error_.load(std::memory_order_acquire); }

  // ---- the device's side ----
  MirrorMode mode() const { return mode_.load(std::memory_order_acquire); }
  bool flushes_both() const { return flush_both_.load(std::memory_order_acquire); }
  // A write to [begin, end) may start now (counted in flight: done_write
  // when it completed on both), or must wait for the fence's release.
  bool try_admit_write(uint64_t begin, uint64_t end) EXCLUDES(mu_);
  // A blocking write: admitted at once, marking the fence dirty if it
  // overlaps it.
  void admit_write(uint64_t begin, uint64_t end) EXCLUDES(mu_);
  void done_write(uint64_t begin, uint64_t end) EXCLUDES(mu_);
  void note_secondary_error(int error);
  // Bumped on every release and mode change: held writes may go.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  void set_waker(CompletionWaker* waker) EXCLUDES(mu_);
  // Bumps the generation and wakes the drive thread (a side may be retired).
  void wake_drive() EXCLUDES(mu_);
  void mark_retired() EXCLUDES(mu_);

 private:
  struct Range {
    uint64_t begin;
    uint64_t end;
  };
  bool fenced(uint64_t begin, uint64_t end) const REQUIRES(mu_);
  void bump_and_wake() REQUIRES(mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;  // with mu_: in-flight writes done, release, retirement
  bool has_fence_ GUARDED_BY(mu_) = false;
  bool dirty_ GUARDED_BY(mu_) = false;  // a blocking write met the fence
  Range fence_ GUARDED_BY(mu_){0, 0};
  std::vector<Range> in_flight_ GUARDED_BY(mu_);
  bool retired_ GUARDED_BY(mu_) = false;
  CompletionWaker* waker_ GUARDED_BY(mu_) = nullptr;
  std::atomic<MirrorMode> mode_{MirrorMode::mirroring};
  std::atomic<bool> flush_both_{false};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> secondary_error_{0};
};

class MirrorDevice final : public DeviceQueue {
 public:
  // `busy_tags`: tags not free when the mirror was put in place (IO the
  // primary may hold in flight from before: their completions pass
  // through, and the first fence waits for them; one started anew was not
  // in flight). A mirror put under a running drive gets a secondary
  // attached to the drive's waker already (and the fence told of it);
  // otherwise attach_waker() attaches both.
  MirrorDevice(std::unique_ptr<DeviceQueue> primary, std::unique_ptr<DeviceQueue> secondary,
               std::shared_ptr<MirrorFence> fence, std::span<const uint32_t> busy_tags);
  ~MirrorDevice() override;

  void start(const DeviceIo& io) override;
  void submit() override;
  size_t reap(std::span<DeviceCompletion> out) override;
  Status attach_waker(CompletionWaker& waker) override;
  bool prepare_sleep(uint64_t& deadline_ns) override;
  bool has_ready() const override;
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;
  bool flushes_blocking() const override { return flushes_blocking_; }
  int flush_blocking() override;
  bool transfers_blocking() const override { return transfers_blocking_; }
  int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) override;

 private:
  enum class Kind : uint8_t { idle, primary, secondary, both, legacy };
  struct Slot {
    Kind kind = Kind::idle;
    bool primary_done = false;
    bool secondary_done = false;
    int32_t primary_result = 0;
    uint64_t begin = 0, end = 0;  // a write's range, fenced against
    IoOp op = IoOp::read;
  };
  struct Held {
    DeviceIo io;
    uint64_t end;
  };

  Slot& slot(uint32_t tag);
  static uint64_t io_bytes(const DeviceIo& io);
  void forget_legacy(uint32_t tag);
  void start_on(int side, const DeviceIo& io, Kind kind);
  void start_both(const DeviceIo& io, uint64_t end);
  void start_held();
  void on_completion(bool from_primary, const DeviceCompletion& c);
  size_t reap_impl(std::span<DeviceCompletion> out, bool inline_only);
  bool side_retirable(int side) const;
  void retire_unused();
  // Blocking calls hold both sides against retirement while they run.
  MirrorMode pin_both();
  void unpin(int side);

  // Ring calls only (dispatch lock):
  std::unique_ptr<DeviceQueue> primary_;
  std::unique_ptr<DeviceQueue> secondary_;
  const std::shared_ptr<MirrorFence> fence_;
  std::vector<Slot> slots_;
  std::vector<Held> held_;
  std::vector<DeviceCompletion> ready_;  // completions for reap(), from ready_head_ on
  size_t ready_head_ = 0;
  std::vector<DeviceCompletion> scratch_;
  uint64_t held_generation_ = 0;  // the fence generation held_ was last tried at
  uint32_t in_flight_[2] = {0, 0};  // ring IOs per side: [0] primary, [1] secondary
  bool started_[2] = {false, false};
  // Blocking calls in progress per side (any thread).
  std::atomic<uint32_t> pinned_[2] = {0, 0};
  const bool flushes_blocking_;
  const bool transfers_blocking_;
};

}  // namespace peregrine
