// Drive: everything the engine keeps for one member drive — its inboxes
// (one SPSC queue per submitter slot), its tag space, backlog, device queue
// and counters. The DriveThread that serves it (alone, or with other
// drives) calls its rounds. Internal to the engine.
//
// Thread rules:
// - push(), dispatch_held(), try_dispatch_inline(), complete_inline(), flush_blocking(),
//   transfer_blocking(), transfer_direct(), the tag calls and stats() are
//   called by submitting threads; run_round(), may_sleep() and finished()
//   by the drive thread. Completions (reap, callbacks, SubIo returns) run
//   under dispatch_mutex_, on the drive thread or on a submitter in
//   complete_inline(); a piece moved by transfer_direct() has no SubIo,
//   and its submitter runs its callback without any drive's lock.
// - dispatch_mutex_ guards the tag space, the backlog, the device queue and
//   the counters. The drive thread holds it for one round of this drive; a
//   submitter takes it (try_lock) to dispatch inline, and (per-volume
//   scheduler, PerVolumeScheduler) to take tags and dispatch its own batch.
// - queued_ and outstanding_ are atomics shared by all; the thread's
//   sleeping flag is shared with the other drives of the same thread.
// - The GUARDED_BY / REQUIRES / EXCLUDES annotations state these rules for
//   the compiler (util/thread_annotations.h): the clang build checks them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "peregrine/backend/completion_waker.h"
#include "peregrine/backend/device_queue.h"
#include "peregrine/backend/mirror_device.h"
#include "peregrine/engine/drive_stats.h"
#include "peregrine/engine/engine_config.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"
#include "sub_io.h"

namespace peregrine {

// Where the thread serving one or more drives sleeps, and whether it does:
// shared by those drives (see DriveThread).
struct DriveThreadSleep {
  std::unique_ptr<CompletionWaker> waker;
  std::atomic<bool> sleeping{false};
  // Wakes the thread if it has said it sleeps; one caller per sleep does.
  void wake_if_sleeping() {
    if (sleeping.load() && sleeping.exchange(false)) waker->wake();
  }
};

class Drive {
 public:
  Drive(uint32_t index, const EngineConfig& config, std::unique_ptr<DeviceQueue> device, uint32_t queue_depth);
  Drive(const Drive&) = delete;
  Drive& operator=(const Drive&) = delete;

  uint32_t index() const { return index_; }
  // Whether the drive's device is memory (DeviceQueue::copies_inline).
  // Any thread, without a lock: false from install_mirror() on, and a
  // caller that read true just before moves its piece through
  // transfer_direct(), which takes whatever device is there then.
  bool copies_inline() const { return copies_inline_.load(std::memory_order_relaxed); }
  uint64_t outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  // Whether a write completed on this drive since the start of its last
  // successful flush: a flush of the volume goes only to such drives (an
  // fsync of a file on one drive, or a journal commit, flushes no other).
  // Any thread.
  bool needs_flush() const {
    return writes_done_.load(std::memory_order_acquire) != flushed_through_.load(std::memory_order_acquire);
  }

  // Ties the drive to the thread that will serve it; before any IO.
  Status attach(DriveThreadSleep& sleep);
  // Asks the serving thread to finish all queued and in-flight IO and stop.
  void request_stop();

  // Drive thread: one round under the dispatch lock — reap and complete,
  // take in what submitters queued, sort, merge, dispatch, submit.
  void run_round() EXCLUDES(dispatch_mutex_);
  // Drive thread, after it has set the sleeping flag: whether this drive
  // lets it sleep (nothing queued since the round, nothing to reap).
  // Lowers `deadline_ns` to when the device needs looking at again.
  bool may_sleep(uint64_t& deadline_ns) EXCLUDES(dispatch_mutex_);
  // Drive thread: stopping, and nothing queued or in flight.
  bool finished() const;
  // Drive thread, on its way out: the final counters for stats().
  void publish_final() EXCLUDES(dispatch_mutex_);

  // Submitter side, per-drive scheduler. Blocks at the high pressure point.
  void push(uint32_t slot, SubIo* const* items, size_t n);
  // Any thread: sends the writes the drive holds (EngineConfig::
  // hold_writes_ns) now, for a caller about to wait for them.
  void dispatch_held();
  // Dispatches the batch on the calling thread if the drive is idle and has
  // the tags for it; returns false (and does nothing) otherwise. With
  // `caller_completes`, IO the device finished inside start() does not
  // wake the drive thread: the caller must call complete_inline() next.
  bool try_dispatch_inline(SubIo* const* items, size_t n, bool caller_completes) EXCLUDES(dispatch_mutex_);
  // Reaps what the device has finished and runs the callbacks on the
  // calling thread (Submitter::Completions::here).
  void complete_inline() EXCLUDES(dispatch_mutex_);
  // After complete_inline(): reaps the device's completions (the kernel's
  // too) and runs their callbacks on the calling thread until nothing is
  // in flight on the drive (true), `deadline_ns` passes or `stop` says
  // the caller has other work (false: the drive thread reaps the rest; the
  // completion that wakes it still does).
  bool poll_inline(uint64_t deadline_ns, bool (*stop)(const void*), const void* stop_ctx) EXCLUDES(dispatch_mutex_);
  // One try at what poll_inline() does, for IO any thread dispatched: if
  // the dispatch lock is free, reaps the device's completions and runs
  // their callbacks on the calling thread. Returns how many completed.
  size_t reap_here() EXCLUDES(dispatch_mutex_);
  // A flush on the calling thread (DeviceQueue::flush_blocking), counted and
  // reported as one through the ring: 0 or -errno, -EOPNOTSUPP when the
  // device does not flush that way (then nothing was done). The device's call runs without
  // the dispatch lock, so the drive's other IO goes on meanwhile.
  int flush_blocking() EXCLUDES(dispatch_mutex_);
  // A read or write of one piece on the calling thread
  // (DeviceQueue::transfer_blocking), counted and reported as one through
  // the ring (a write counts for needs_flush): 0 or -errno, -EOPNOTSUPP
  // when the device does not transfer that way (then nothing was done).
  // Runs without the dispatch lock, as flush_blocking() does.
  int transfer_blocking(IoOp op, uint64_t member_offset, std::byte* buf, uint64_t len) EXCLUDES(dispatch_mutex_);

  // transfer_blocking() for a piece a submitter moves itself (Submitter::
  // add, memory members): counted in the caller's `counts`, not timed (a
  // memory copy), and the dispatch lock taken only for a failure.
  int transfer_direct(IoOp op, uint64_t member_offset, std::byte* buf, uint64_t len, DirectCounts& counts)
      EXCLUDES(dispatch_mutex_);

  // Submitter side, per-volume scheduler (PerVolumeScheduler): the drive's
  // tags, taken at plug time and dispatched at unplug.
  bool try_acquire_tag(uint32_t* tag) EXCLUDES(dispatch_mutex_);
  void wait_for_tag() EXCLUDES(dispatch_mutex_);
  // A tag between try_acquire_tag() and dispatch_tags() is the caller's
  // alone: these two touch its slot without the dispatch lock.
  void bind_tag(uint32_t tag, SubIo* chain_head);
  SubIo* tag_chain(uint32_t tag);
  void dispatch_tags(const uint32_t* tags, size_t n) EXCLUDES(dispatch_mutex_);

  // Puts a MirrorDevice (backend/mirror_device.h) over the drive's device,
  // with `secondary` (a new member's ring) as its other side: an online
  // replace. Any thread; waits for blocking calls in progress.
  Status install_mirror(std::unique_ptr<DeviceQueue> secondary, std::shared_ptr<MirrorFence> fence)
      EXCLUDES(dispatch_mutex_);

  // Any thread that holds no drive's dispatch lock (it takes this one's).
  DriveStats stats() EXCLUDES(dispatch_mutex_, stats_mutex_);

 private:
  struct TagSlot {
    SubIo* head = nullptr;
    IoOp op = IoOp::read;
    uint64_t offset = 0;     // member offset of the next byte to transfer
    uint64_t remaining = 0;  // bytes still to transfer
    uint64_t dispatch_ns = 0;
    uint64_t flush_covers = 0;  // a flush: writes_done_ when it was started
    uint32_t iov_first = 0;  // first iovec not yet fully transferred
    uint32_t iovcnt = 0;
    std::vector<iovec> iov;
  };

  size_t drain_inboxes() REQUIRES(dispatch_mutex_);
  void merge_into_backlog(SubIo* const* items, size_t n) REQUIRES(dispatch_mutex_);
  void dispatch_backlog(uint64_t now) REQUIRES(dispatch_mutex_);
  // Whether the backlog is writes nobody waits for that may wait for more
  // to join them (EngineConfig::hold_writes_ns); starts the hold.
  bool hold_backlog(uint64_t now) REQUIRES(dispatch_mutex_);
  // Puts the held backlog's sub-IOs before incoming_'s and empties the
  // backlog, for merge_into_backlog() to sort them with newer ones.
  // Returns how many.
  size_t regather_backlog() REQUIRES(dispatch_mutex_);
  void wake_for_inline_completions() REQUIRES(dispatch_mutex_);  // submitter side
  // A blocking call's failure counted and reported as complete() does one
  // through the ring: the error its caller gets.
  int blocking_failure(const IoErrorReport& report) REQUIRES(dispatch_mutex_);
  // What a blocking transfer that moved `moved` bytes (or -errno) of `len`
  // failed with, if it did: a member that ended early is an IO error.
  std::optional<IoErrorReport> transfer_failure(IoOp op, uint64_t member_offset, uint64_t len, int64_t moved) const;
  void start_io(uint32_t tag, SubIo* head, uint64_t now) REQUIRES(dispatch_mutex_);
  // finished_inline_only: DeviceQueue::reap_finished_inline (submitters).
  // *now_out, if given, gets the time the completions were stamped with
  // (left alone when there were none).
  size_t reap_and_complete(bool finished_inline_only = false, uint64_t* now_out = nullptr) REQUIRES(dispatch_mutex_);
  // What every reap that completed IO does next, on whichever thread reaped
  // (drive thread, inline dispatcher, poller): submits what complete()
  // sent again, lets producers past the pressure point, wakes tag waiters
  // and publishes the counters (at most every kPublishIntervalNs).
  void after_completions(uint64_t now) REQUIRES(dispatch_mutex_);
  void complete(const DeviceCompletion& c, uint64_t now) REQUIRES(dispatch_mutex_);
  void finish_chain(SubIo* head, int error) REQUIRES(dispatch_mutex_);
  void retry_unmerged(SubIo* head) REQUIRES(dispatch_mutex_);
  // `now`: a monotonic_ns() the caller read while holding dispatch_mutex_
  // (so never older than last_publish_ns_), often the reap's own.
  void publish_stats(bool force, uint64_t now) REQUIRES(dispatch_mutex_) EXCLUDES(stats_mutex_);
  bool inboxes_empty() const;
  void release_pressure() EXCLUDES(pressure_mutex_);

  const uint32_t index_;
  const EngineConfig& config_;
  std::atomic<bool> copies_inline_;  // see copies_inline()
  // Replaced only by install_mirror(), under both locks.
  std::unique_ptr<DeviceQueue> device_ PT_GUARDED_BY(dispatch_mutex_);
  // DeviceQueue::flushes_blocking(), flush_blocking() and their transfer_
  // counterparts are the calls a device takes without the dispatch lock;
  // they hold device_swap_mutex_ shared meanwhile.
  DeviceQueue& device_for_blocking_flush() NO_THREAD_SAFETY_ANALYSIS { return *device_; }
  std::shared_mutex device_swap_mutex_;
  DriveThreadSleep* sleep_ = nullptr;  // set by attach()

  // Hand-off: inbox_[slot] is written by that slot's submitter only.
  std::vector<std::unique_ptr<SubIoQueue>> inbox_;
  std::atomic<uint32_t> inbox_count_{0};  // slots ever opened: drain bound
  std::atomic<uint64_t> inbox_epoch_{0};  // bumped after every push
  uint64_t round_epoch_ = 0;              // drive thread: epoch its last round saw
  std::atomic<bool> stopping_{false};
  // The backlog holds writes (hold_backlog): a push of more such
  // writes need not wake the drive thread, which sleeps until the hold
  // ends. Set and cleared by the drive thread under dispatch_mutex_; a
  // pusher reads it after it moved the epoch, and the drive thread clears
  // it before may_sleep() reads the epoch, so one of them sees the other.
  std::atomic<bool> holding_{false};
  // dispatch_held() calls. A round serves those it read before it took in
  // the inboxes, so the writes pushed before such a call are in its
  // backlog; may_sleep() lets no call go unserved.
  std::atomic<uint64_t> held_wanted_{0};
  uint64_t held_wanted_round_ GUARDED_BY(dispatch_mutex_) = 0;   // read at the round's start
  uint64_t held_wanted_served_ GUARDED_BY(dispatch_mutex_) = 0;  // served through
  uint64_t hold_until_ns_ GUARDED_BY(dispatch_mutex_) = 0;
  // Bytes of the writes held and pushed since the hold began: the pusher
  // that takes them to max_io_bytes wakes the drive thread.
  std::atomic<uint64_t> hold_pushed_bytes_{0};
  // The last dispatch left IO in the backlog for want of tags: not held.
  bool backlog_left_ GUARDED_BY(dispatch_mutex_) = false;
  std::atomic<uint64_t> queued_{0};       // sub-IOs in inboxes or backlog
  std::atomic<uint64_t> outstanding_{0};  // sub-IOs queued or on the device
  // Writes completed by the device, and how many of them the last
  // successful flush covered (needs_flush). Written under dispatch_mutex_,
  // read by any thread.
  std::atomic<uint64_t> writes_done_{0};
  std::atomic<uint64_t> flushed_through_{0};
  std::atomic<uint64_t> pressure_waits_{0};
  std::atomic<uint32_t> pressure_waiters_{0};
  Mutex pressure_mutex_;  // guards nothing: pressure_cv_'s mutex (the state is atomic)
  std::condition_variable pressure_cv_;
  std::atomic<uint32_t> tag_waiters_{0};
  std::condition_variable tag_cv_;  // with dispatch_mutex_

  Mutex dispatch_mutex_;
  std::vector<TagSlot> tags_ GUARDED_BY(dispatch_mutex_);  // a slot: see bind_tag()
  std::vector<uint32_t> free_tags_ GUARDED_BY(dispatch_mutex_);
  SubIo* backlog_head_ GUARDED_BY(dispatch_mutex_) = nullptr;
  SubIo* backlog_tail_ GUARDED_BY(dispatch_mutex_) = nullptr;
  uint64_t backlog_ios_ GUARDED_BY(dispatch_mutex_) = 0;
  uint64_t seq_ GUARDED_BY(dispatch_mutex_) = 0;
  uint64_t in_flight_ios_ GUARDED_BY(dispatch_mutex_) = 0;
  std::vector<SubIo*> incoming_ GUARDED_BY(dispatch_mutex_);
  std::vector<SubIo*> regathered_ GUARDED_BY(dispatch_mutex_);  // regather_backlog()'s
  std::vector<DeviceCompletion> completions_ GUARDED_BY(dispatch_mutex_);
  DriveStats counters_ GUARDED_BY(dispatch_mutex_);
  uint64_t last_publish_ns_ GUARDED_BY(dispatch_mutex_) = 0;
  bool dirty_ GUARDED_BY(dispatch_mutex_) = false;

  mutable Mutex stats_mutex_;
  DriveStats published_ GUARDED_BY(stats_mutex_);
};

}  // namespace peregrine
