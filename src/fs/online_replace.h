// Online replace: `peregrine replace --old OLD --new NEW MOUNTPOINT` on a
// mounted volume (the ioctl of include/peregrine/fs/replace_ioctl.h, served
// in fs_replace.cpp). The daemon checks NEW as the offline command does
// (volume/replace_steps.h), puts a MirrorDevice over OLD's drive (every
// write reaches both members from then on, backend/mirror_device.h) and
// copies OLD's bytes to NEW on a thread of its own, a chunk at a time under
// the mirror's fence, at most at the rate asked. Then it makes NEW durable,
// switches the superblocks in the offline replace's crash-safe order
// (commit_replace), lets NEW alone serve the drive, and closes OLD.
//
// A crash or kill -9 before the switch leaves OLD the member, complete
// (every write reached it): the next mount uses it, and NEW is no member
// (its superblocks were never written, or cleared first). In the switch
// the volume assembles with OLD or with NEW, as after an interrupted
// offline replace (docs/usage.md). A read error on OLD, a write error on
// NEW or an unmount gives the replace up: OLD stays the member, NEW is
// closed (and removed if the replace created it).
//
// Tests only: PEREGRINE_TEST_REPLACE_STOP_AFTER in the daemon's
// environment makes it _exit(9) at a step ("copy:PCT", "copy",
// "new-primary", "new-backup", "old-primary", "old-backup"), as the
// offline command does; "read-error:PCT" makes OLD's reads fail with EIO
// from PCT percent of the copy on (a failing old member); "fail:STEP"
// makes the switch fail after that step (a write error half-way).
//
// Thread rules: start(), status() and progress() from any thread (ioctl
// workers, the statistics reader); stop() from the thread that ends the
// mount. The copy runs on the object's own thread. layout_mu (shared with
// OnlineGrow) is held while the replace checks the volume and while it
// switches, so a grow never runs against a half-switched member list.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "peregrine/backend/mirror_device.h"
#include "peregrine/config/settings.h"
#include "peregrine/fs/replace_ioctl.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/mutex.h"
#include "peregrine/volume/replace_steps.h"

namespace peregrine::fs {

class OnlineReplace {
 public:
  // `renamed(index, path)` is told once NEW serves member `index` (the
  // daemon's error log names members by path).
  OnlineReplace(VolumeRuntime& vr, const config::Settings& settings, Mutex& layout_mu, LogLine log,
                std::function<void(uint32_t, const std::string&)> renamed = {});
  ~OnlineReplace();
  OnlineReplace(const OnlineReplace&) = delete;
  OnlineReplace& operator=(const OnlineReplace&) = delete;

  // kReplaceStart: checks, puts the mirror in place and starts the copy.
  ReplaceIoctl start(const ReplaceIoctl& request) EXCLUDES(mu_);
  // kReplaceStatus, and the statistics document's "replace" object.
  ReplaceIoctl status() const EXCLUDES(mu_);
  // Member `index`'s path if a replace made it another than at mount
  // (else ""). Any thread.
  std::string member_path(uint32_t index) const EXCLUDES(mu_);
  // `busy()` names another change of the member list in progress (an
  // online restripe; "" when none): start() refuses meanwhile. Set before
  // the session serves.
  void refuse_while(std::function<std::string()> busy) { refuse_while_ = std::move(busy); }
  // A copy or switch in progress (OnlineGrow refuses then). REQUIRES: the
  // caller holds layout_mu.
  bool busy() const { return busy_.load(std::memory_order_acquire); }
  // A switch failed half-way: both OLD and NEW claim the member's index
  // and take its writes until the replace is finished offline. No other
  // change of the member list may start on this mount (it would write
  // superblocks to OLD alone). Any thread.
  bool keeps_both_members() const { return keeps_both_.load(std::memory_order_acquire); }
  // Why another change of the member list (`what`: "grow the volume", ...)
  // must not start now, "" when it may: a copy or switch in progress, or
  // both members kept. Any thread.
  std::string holds_members(const std::string& what) const EXCLUDES(mu_);
  // The mount ends: a copy in progress gives up; waits for the thread.
  void stop() EXCLUDES(mu_);

 private:
  void run();  // the copy thread
  Status copy_all();
  // fail_read: the test hook's read error.
  Status copy_chunk(uint64_t begin, uint64_t end, bool fail_read);
  void give_up(const Status& why);
  void finish();
  void set_state(ReplaceState s, const std::string& message = {}) EXCLUDES(mu_);
  void pace() EXCLUDES(mu_);

  VolumeRuntime& vr_;
  const config::Settings& settings_;
  Mutex& layout_mu_;
  LogLine log_;
  const std::function<void(uint32_t, const std::string&)> renamed_;
  std::function<std::string()> refuse_while_;

  mutable Mutex mu_;  // guards the status below and the stop flag
  std::condition_variable stop_cv_;  // with mu_: stop() wakes a pacing copy
  ReplaceState state_ GUARDED_BY(mu_) = kReplaceNone;
  std::string message_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  uint64_t started_ns_ GUARDED_BY(mu_) = 0;
  uint64_t finished_ns_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> done_bytes_{0};
  uint64_t total_bytes_ GUARDED_BY(mu_) = 0;
  std::string old_path_ GUARDED_BY(mu_), new_path_ GUARDED_BY(mu_);
  // Members a finished replace changed: index -> path.
  std::vector<std::pair<uint32_t, std::string>> replaced_ GUARDED_BY(mu_);
  std::atomic<bool> busy_{false};
  std::atomic<bool> keeps_both_{false};

  // The replace in progress: set by start() before the thread starts (the
  // two below under mu_, for status()), then read by the thread.
  uint32_t index_ = 0;
  uint64_t rate_ = 0;  // bytes per second, 0: no limit
  Superblock old_sb_;
  std::optional<NewMember> new_;  // after the switch its file is OLD's, until closed
  std::shared_ptr<MirrorFence> fence_;
  std::thread thread_;
};

}  // namespace peregrine::fs
