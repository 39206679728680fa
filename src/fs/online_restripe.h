// Online restripe: `peregrine grow --add NEW... MOUNTPOINT` on a mounted
// volume (the ioctl of include/peregrine/fs/restripe_ioctl.h, served in
// fs_restripe.cpp). The daemon checks the NEW members as the offline
// command does (volume/restripe.h), gives each a drive in the engine,
// starts the engine's layout fence (Engine::begin_restripe: IO that passed
// without it drains), and then moves the stripe units window by window on
// a thread of its own, at most at the rate asked: each window closed to
// the volume's IO, copied, synced, its cursor written to every superblock
// copy, then opened again with the cursor past it (run_online_restripe).
// Once every unit is moved and the copies are committed for N + k
// members, the engine counts them and the metadata layer gets the new
// space, as after an online grow.
//
// Once one has finished, the mount may restripe again, onto more members.
//
// A crash or kill -9 at any point leaves what an interrupted offline
// restripe leaves: the volume refuses to mount until `peregrine grow --add`
// runs over its members, which resumes from the durable cursor. A stop
// (the volume is unmounted) or an IO error gives the move up at a window
// boundary the same way; the volume goes on serving, over N + k members
// with the cursor where it stopped, until it is unmounted.
//
// Tests only: PEREGRINE_TEST_RESTRIPE_STOP_AFTER=K in the daemon's
// environment makes it _exit(9) right after superblock copy K of the run
// is written and synced (the record's copies, then two per member per
// window, then the commit's), as PEREGRINE_TEST_GROW_STOP_AFTER does;
// "commit:K" after copy K of the commit; "give-up:W" gives the move up
// after window W, as an IO error would, and the mount goes on.
//
// Thread rules: start(), status(), member_path() and busy() from any
// thread (ioctl workers, the statistics reader); stop() from the thread
// that ends the mount. The move runs on the object's own thread. The
// layout mutex (shared with OnlineGrow and OnlineReplace) is held while a
// restripe starts and while it commits, so none of them changes the member
// list under another.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "peregrine/config/settings.h"
#include "peregrine/fs/restripe_ioctl.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/meta/metadata.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/mutex.h"
#include "peregrine/volume/restripe.h"

namespace peregrine::fs {

class OnlineRestripe {
 public:
  // `other_busy` names an online replace in progress ("" when none): a
  // restripe does not start meanwhile. `named(index, path)` is told each
  // member the restripe adds (the daemon's error log names members).
  OnlineRestripe(VolumeRuntime& vr, meta::Metadata& md, const config::Settings& settings, Mutex& layout_mu,
                 LogLine log, std::function<std::string()> other_busy,
                 std::function<void(uint32_t, const std::string&)> named = {});
  ~OnlineRestripe();
  OnlineRestripe(const OnlineRestripe&) = delete;
  OnlineRestripe& operator=(const OnlineRestripe&) = delete;

  // kRestripeStart: checks, drives, the fence's start; then the move runs.
  RestripeIoctl start(const RestripeIoctl& request) EXCLUDES(mu_);
  RestripeIoctl status() const EXCLUDES(mu_);
  // The path of member `index` if a restripe of this mount added it, else "".
  std::string member_path(uint32_t index) const EXCLUDES(mu_);
  // Moving or committing (OnlineGrow and OnlineReplace refuse then).
  bool busy() const { return busy_.load(std::memory_order_acquire); }
  // Why another change of the member list (`what`: "grow the volume", ...)
  // must not start now, "" when it may: a restripe moving, or one stopped
  // part-way, whose two layouts and record in the old members' superblocks
  // only the offline command finishes. Any thread.
  std::string holds_members(const std::string& what) const;
  // The mount ends: a move in progress stops at the next window boundary.
  void stop() EXCLUDES(mu_);

 private:
  void run();  // the move's thread
  void pace() EXCLUDES(mu_);
  void finish(const Superblock& committed, uint64_t hole_bytes);
  void set_state(RestripeState s, const std::string& message) EXCLUDES(mu_);

  VolumeRuntime& vr_;
  meta::Metadata& md_;
  const config::Settings& settings_;
  Mutex& layout_mu_;
  LogLine log_;
  const std::function<std::string()> other_busy_;
  const std::function<void(uint32_t, const std::string&)> named_;

  mutable Mutex mu_;  // guards the status below and the stop flag
  std::condition_variable stop_cv_;  // with mu_: stop() wakes a pacing move
  RestripeState state_ GUARDED_BY(mu_) = kRestripeNone;
  std::string message_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  uint64_t started_ns_ GUARDED_BY(mu_) = 0;
  uint64_t finished_ns_ GUARDED_BY(mu_) = 0;
  uint64_t total_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t rate_ GUARDED_BY(mu_) = 0;  // bytes per second, 0: no limit
  uint32_t old_count_ GUARDED_BY(mu_) = 0, new_count_ GUARDED_BY(mu_) = 0;
  uint64_t old_data_area_ GUARDED_BY(mu_) = 0, new_data_area_ GUARDED_BY(mu_) = 0;
  uint64_t hole_bytes_ GUARDED_BY(mu_) = 0;  // set once done
  std::map<uint32_t, std::string> added_paths_ GUARDED_BY(mu_);  // by member index, every restripe of this mount
  std::atomic<uint64_t> done_bytes_{0};
  std::atomic<uint64_t> windows_{0};
  std::atomic<bool> busy_{false};

  // The restripe of this mount: made by start() (also when it failed
  // after the engine took a drive, whose member file must stay open), then
  // the thread's; dropped by the next start() once it finished.
  std::optional<OnlineRestripeStart> start_;
  Submitter* via_ = nullptr;  // borrowed from the pool: resubmits held-back IO
  std::thread thread_;
};

}  // namespace peregrine::fs
