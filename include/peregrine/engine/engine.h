// Engine: serves volume Requests on N member drives, per drive.
//
// Data path (per_drive scheduler, docs/design.md section 2.1): a submitting thread
// owns a Submitter. add() splits each request at stripe-unit boundaries into
// sub-IOs and sorts them into per-drive plug lists; unplug() (explicit, or
// when the batch reaches the high watermark) pushes each drive's share into
// the lock-free SPSC queue of that (submitter, drive) pair and wakes the
// drive thread only if it sleeps. Pinned drive threads (one per drive, or
// one per CPU serving the drives placed there when drives outnumber CPUs)
// drain each drive's queues, sort by member offset, merge neighbours, take
// a tag only at dispatch, submit with io_uring, reap completions and run
// the requests' callbacks. A small batch on an idle volume is dispatched inline by the
// submitting thread instead, and a request that is one piece on a memory
// member is moved by the submitting thread itself at its next unplug with
// Completions::here. A drive above its high pressure point blocks
// submitters until it drains below the low one.
//
// An online restripe onto more members (peregrine grow --add on a mounted
// volume) adds drives while IO runs and moves stripe units window by
// window behind a layout fence (the restripe calls below).
//
// Thread rules: Engine methods are thread-safe. A Submitter belongs to one
// thread at a time. Destroy every Submitter before the Engine; destroying
// the Engine completes all IO still queued or in flight, then stops the
// drive threads. A thread that holds staged IO hands it on (unplug())
// before it waits for other IO to complete: the pressure points and the
// restripe's waits rely on it.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "peregrine/engine/device_factory.h"
#include "peregrine/engine/drive_stats.h"
#include "peregrine/engine/engine_config.h"
#include "peregrine/engine/request.h"
#include "peregrine/engine/stripe_map.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/result.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine {

class Drive;
class LayoutFence;
class MirrorFence;
class DriveThread;
class PerVolumeScheduler;
struct SubmitterSlot;
struct DirectPiece;

class Submitter;

class Engine {
 public:
  // Each drive's device comes from `devices` (see device_factory.h); the
  // first form opens plain io_uring rings (UringDeviceFactory).
  static Expected<std::unique_ptr<Engine>> create(const EngineConfig& config, const StripeMap& map,
                                                  std::vector<DriveSpec> drives);
  static Expected<std::unique_ptr<Engine>> create(const EngineConfig& config, const StripeMap& map,
                                                  std::vector<DriveSpec> drives, DeviceFactory& devices);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const StripeMap& map() const { return map_; }
  // Online grow: the members' superblocks (all of them, durably) now
  // record `member_data_size`, larger than the map's; see StripeMap::grow.
  void grow(uint64_t member_data_size) { map_.grow(member_data_size); }
  // The config as created. Its watermarks are the mount's; the ones in
  // effect are low_watermark() and high_watermark().
  const EngineConfig& config() const { return config_; }
  uint32_t drive_count() const { return drive_count_.load(std::memory_order_acquire); }
  // The batching watermarks in effect (EngineConfig's, volume-wide): the
  // config's until set_watermarks(). Any thread.
  uint32_t low_watermark() const { return low_watermark_.load(std::memory_order_relaxed); }
  uint32_t high_watermark() const { return high_watermark_.load(std::memory_order_relaxed); }
  // After a restripe onto more drives, the volume-wide values for the new
  // count (the config gives them per drive). `high` is held below the
  // submitters' SubIo pools, and `low` at or below `high`. Any thread;
  // batches already staged keep the values they saw.
  void set_watermarks(uint32_t low, uint32_t high);

  // A Submitter for the calling thread; fails when max_submitters are open.
  Expected<std::unique_ptr<Submitter>> open_submitter() EXCLUDES(slots_mutex_);

  DriveStats stats(uint32_t drive) const;
  // Sub-IOs queued or on a device, summed over the drives (a racy snapshot:
  // each drive's count is read once, without stopping the others).
  uint64_t outstanding() const;

  // A flush of the volume made by the calling thread when one drive alone
  // needs it (Drive::needs_flush: the fdatasync after a small write): a
  // blocking flush of that member (DeviceQueue::flush_blocking) costs the
  // member's flush and no hand-off, where the ring's would wake the
  // drive thread, an io_uring worker and then the caller. 0 or -errno;
  // -EOPNOTSUPP when more drives need one (flushed in parallel through
  // the rings, as submit() does) or the device cannot. Any thread.
  int flush_lone_drive();
  // For a thread about to sleep until IO dispatched earlier completes
  // (fsync waiting for a write answered before its IO): reaps what each
  // drive with IO outstanding has finished, if its lock is free, and runs
  // the callbacks here, so that no drive thread has to be woken to do it.
  // Returns how many IOs completed. The caller must hold no lock an IO's
  // callback takes. Any thread.
  size_t reap_here();
  // For a thread about to wait for writes the drives may hold (Request::
  // may_hold): the drives send what they hold for merging
  // (EngineConfig::hold_writes_ns) now. Any thread; never blocks.
  void dispatch_held();
  // A read or write of the volume that one stripe unit holds, made by the
  // calling thread on that member (DeviceQueue::transfer_blocking), for a
  // caller that would only wait for it: the journal's commits, the
  // metadata's reads. The ring's way would hand it to the drive thread and
  // back (and, on a member with latency, wake the drive thread from the
  // kernel's completion first). 0 or -errno; -EINVAL as Submitter::add;
  // -EOPNOTSUPP when the range spans members or the device cannot (then
  // nothing was done). Any thread.
  int transfer_lone_piece(IoOp op, uint64_t offset, std::byte* buf, uint64_t len);

  // Online replace: drive `drive` gets a MirrorDevice over its device with
  // `secondary` (the new member's, from the same DeviceFactory kind) as
  // its other side; `fence` is how the copier steers it
  // (backend/mirror_device.h). The mirror stays until the Engine goes.
  // Any thread.
  Status install_mirror(uint32_t drive, std::unique_ptr<DeviceQueue> secondary, std::shared_ptr<MirrorFence> fence);

  // Online restripe (docs/design.md, "Online restripe"). One thread (the
  // mover) makes these calls, in this order; other threads go on
  // submitting IO meanwhile.
  //
  // add_drive: a new member drive `drive_count()`, served by a thread of
  // its own (pinned to the CPU a mount over all the drives would give it,
  // unless the config pins none), with `device` (DeviceFactory's kind) over
  // `spec.fd`. IO reaches it only through a restripe's new layout. Fails
  // when kMaxDrives are in use, or with the device's or the thread's error.
  Status add_drive(const DriveSpec& spec, std::unique_ptr<DeviceQueue> device);
  // Starts the layout over `new_count` drives with the cursor at 0 (every
  // unit in its old place) and the fence: every read and write from now on
  // passes it. Returns once no IO that went past without the fence is in
  // flight; IO arriving meanwhile waits and is then submitted through
  // `via` (the mover's Submitter). ETIMEDOUT (and the layout as before) if
  // that IO is still in flight after `drain_limit`.
  // REQUIRES: no restripe in progress, the per-drive scheduler, and
  // new_count <= drive_count().
  Status begin_restripe(uint32_t new_count, Submitter& via,
                        std::chrono::milliseconds drain_limit = std::chrono::seconds(60));
  // Stripe units [begin, end) are about to move: IO that touches them waits
  // from now on; returns once none that reached them before is in flight.
  void close_window(uint64_t begin, uint64_t end);
  // The units below `cursor` are in their new places (a cursor below the
  // current one changes nothing: a window given up): opens the window and
  // submits the IO that waited for it through `via`.
  void open_window(uint64_t cursor, Submitter& via);
  // Every unit is in its new place: the volume counts new_count members,
  // and IO no longer passes the fence.
  void finish_restripe();
  // Requests the fence holds back or waits for now, and the window closed
  // now in stripe units ({0, 0}: none) (tests, statistics).
  size_t restripe_parked() const;
  size_t restripe_in_flight() const;
  std::pair<uint64_t, uint64_t> restripe_window() const;

 private:
  friend class Submitter;
  Engine(const EngineConfig& config, const StripeMap& map);
  // Submits the requests the fence held back, through `via`.
  static void resubmit(const std::vector<Request*>& parked, Submitter& via);
  // begin_restripe's drain; false when `deadline` passed first.
  bool drain_unfenced(std::chrono::steady_clock::time_point deadline) EXCLUDES(slots_mutex_);

  EngineConfig config_;
  std::atomic<uint32_t> low_watermark_, high_watermark_;
  StripeMap map_;
  // drives_[0, drive_count_) exist; add_drive() fills the next one before it
  // publishes the count, and none is ever removed before ~Engine.
  std::array<std::unique_ptr<Drive>, kEngineMaxDrives> drives_;
  std::atomic<uint32_t> drive_count_{0};
  Mutex threads_mutex_;
  std::vector<std::unique_ptr<DriveThread>> threads_ GUARDED_BY(threads_mutex_);  // own the wakers drives_ point at
  // For placing added drives as create() placed the first ones: each
  // drive's NUMA node, and the CPUs create()'s thread could run on (the
  // thread that adds a drive may be pinned to one).
  std::vector<int> drive_nodes_ GUARDED_BY(threads_mutex_);
  std::vector<int> placement_cpus_ GUARDED_BY(threads_mutex_);
  mutable Mutex slots_mutex_;
  std::vector<std::unique_ptr<SubmitterSlot>> slots_ GUARDED_BY(slots_mutex_);  // only grows
  std::unique_ptr<LayoutFence> fence_;
  // Engine::transfer_lone_piece calls in progress that may have passed the
  // fence's check before it was active (begin_restripe waits for them).
  std::atomic<uint32_t> lone_transfers_{0};
};

class Submitter {
 public:
  ~Submitter();  // unplugs what is batched and releases the slot
  Submitter(const Submitter&) = delete;
  Submitter& operator=(const Submitter&) = delete;

  // Adds a request to this thread's batch. Returns 0, or -EINVAL if the
  // range is outside the volume or offset, length or buffer is not
  // 4096-aligned (then on_complete is not called). A zero-length read or
  // write completes at once. May unplug, and may block at a pressure point.
  // A read or write that is one piece of at most inline_max_bytes on a
  // memory member (DeviceQueue::copies_inline) waits for the next unplug:
  // with Completions::here this thread moves it and runs its callback
  // there, with any other it goes to its drive as every piece does.
  int add(Request& request);

  // Where unplug() completes what it dispatched inline.
  enum class Completions {
    on_drive_thread,  // the drive thread reaps it and runs the callbacks
    here,             // this thread does, before unplug() returns
    // As `here`, for IO nobody waits for (a write answered before its
    // IO): it is not dispatched inline on a member with latency, whose
    // submission (30 us of a 4 KiB O_DIRECT write on ext4 in a VM) would
    // hold this thread while its caller waits for the next reply; the drive
    // thread submits it, merged with its neighbours (Request::may_hold).
    // Memory members still copy inline, as with `here`.
    unawaited_here,
  };

  // Hands the batch to the drives (or dispatches it inline). With
  // Completions::here, IO that a member finished within the inline
  // dispatch (memory-backed members copy inline) is reaped on this thread
  // and the drive thread is not woken for it, saving the two context
  // switches of a hand-off at low depth. The callbacks of those requests,
  // and of any other IO that drive has finished, then run on this thread
  // under the drive's dispatch lock, as they would on the drive thread: ask
  // for it only where this thread holds no lock a callback takes and waits
  // for nothing a callback must do (a FUSE thread between requests).
  void unplug(Completions where = Completions::on_drive_thread);

  // Whether add() has staged sub-IOs that no unplug() has handed on yet.
  bool has_staged() const;

  // With EngineConfig::inline_poll_ns, Completions::here also waits for IO
  // an inline dispatch left on a member (one with latency), reaping its
  // completion on this thread for at most that long, and no longer than
  // until `stop(ctx)` returns true (this thread has other work: a FUSE
  // ring with requests ready). Set once, by the thread that uses the
  // submitter (a pool that hands the submitter to another thread clears
  // it first); without it nothing polls.
  void set_poll_stop(bool (*stop)(const void*), const void* ctx) {
    poll_stop_ = stop;
    poll_stop_ctx_ = ctx;
  }
  bool polls() const { return poll_stop_ != nullptr; }

  // Whether add() keeps lone pieces on memory members aside for this
  // thread to move (on by default). A classic FUSE worker that batches
  // requests (fuse.batch_requests) turns it on only for requests it found
  // queued, and off otherwise: for a lone one it cost 18-33% of the 4 KiB
  // reads at QD 1 on tmpfs members, and queued ones gained 14-24% at QD 32
  // (docs/performance-history.md, "Memory members" and "Classic workers
  // move queued pieces"). Set by the thread that uses the submitter,
  // between requests: a piece already kept aside is moved by the next
  // unplug that may run callbacks, or handed to its drive by any other,
  // whatever the flag says then.
  void set_direct_pieces(bool on) { direct_pieces_ = on; }

  // add() + unplug().
  int submit(Request& request) {
    int rc = add(request);
    unplug();
    return rc;
  }

 private:
  friend class Engine;
  Submitter(Engine& engine, SubmitterSlot& slot);

  // What a wait for this slot's SubIos to come back does first.
  void make_progress();
  // One SubIo of `r` onto `member`'s plug list (the pool may unplug first).
  void stage_on_drive(Request& r, uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len);
  // A request in one piece on a memory member: kept aside and moved by
  // this thread at a Completions::here unplug (Drive::transfer_direct),
  // past the tags, backlog and device ring, which buy nothing where the
  // copy is the IO and cost cache lines shared with the other submitters.
  // False: the request takes the drives' path.
  bool stage_direct(Request& r);
  // An unplug whose caller may not run callbacks: the pieces kept aside
  // go onto their drives' plug lists.
  void stage_direct_on_drives();
  void stage_on_its_drive(const DirectPiece& d);
  void move_direct_pieces();
  // unplug() but for the restripe's bookkeeping.
  void unplug_batch(Completions where);

  Engine& engine_;
  SubmitterSlot& slot_;
  std::unique_ptr<PerVolumeScheduler> per_volume_;  // Scheduler::per_volume only
  std::vector<uint32_t> flush_targets_;              // add(): the drives a flush goes to
  bool awaited_staged_ = false;                      // a request staged since unplug is awaited
  bool (*poll_stop_)(const void*) = nullptr;
  const void* poll_stop_ctx_ = nullptr;
  bool direct_pieces_ = true;
};

}  // namespace peregrine
