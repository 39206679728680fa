// Online restripe: OnlineRestripe (online_restripe.h) and the ioctl that
// drives it.
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fs_context.h"
#include "online_restripe.h"
#include "peregrine/config/engine_mapping.h"
#include "peregrine/util/clock.h"
#include "peregrine/util/test_hooks.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::fs {
namespace {

constexpr const char* kRestripeStopEnv = "PEREGRINE_TEST_RESTRIPE_STOP_AFTER";
// The data one window moves: IO that touches a window waits while it
// moves (a few ms at a drive's sequential speed), so a mounted volume moves
// far smaller windows than the offline command's 128 MiB. Each costs a
// sync of every member and two superblock copies on each; at 4 MiB the
// move still ran at the disk's copy speed (docs/performance.md, "Online
// restripe").
constexpr uint64_t kWindowBytes = 4 << 20;

RestripeIoctl refused_restripe(int err, const std::string& why) {
  RestripeIoctl r{};
  r.error = err;
  r.state = kRestripeRefused;
  std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
  return r;
}

std::vector<std::string> paths_of(const RestripeIoctl& q) {
  std::vector<std::string> out;
  const char* p = q.new_members;
  const char* end = q.new_members + sizeof q.new_members;
  while (p < end && *p != '\0') {
    const size_t n = strnlen(p, static_cast<size_t>(end - p));
    out.emplace_back(p, n);
    p += n + 1;
  }
  return out;
}

}  // namespace

OnlineRestripe::OnlineRestripe(VolumeRuntime& vr, meta::Metadata& md, const config::Settings& settings,
                               Mutex& layout_mu, LogLine log, std::function<std::string()> other_busy,
                               std::function<void(uint32_t, const std::string&)> named)
    : vr_(vr),
      md_(md),
      settings_(settings),
      layout_mu_(layout_mu),
      log_(std::move(log)),
      other_busy_(std::move(other_busy)),
      named_(std::move(named)) {}

OnlineRestripe::~OnlineRestripe() { stop(); }

void OnlineRestripe::set_state(RestripeState s, const std::string& message) {
  MutexLock lock(mu_);
  state_ = s;
  message_ = message;
  if (s != kRestripeMoving) finished_ns_ = monotonic_ns();
}

RestripeIoctl OnlineRestripe::status() const {
  MutexLock lock(mu_);
  RestripeIoctl r{};
  r.state = state_;
  r.old_count = old_count_;
  r.new_count = new_count_;
  r.done_bytes = std::min(done_bytes_.load(std::memory_order_relaxed), total_bytes_);
  r.total_bytes = total_bytes_;
  r.windows = windows_.load(std::memory_order_relaxed);
  r.rate_limit_bytes = rate_;
  r.old_data_area = old_data_area_;
  r.new_data_area = new_data_area_;
  r.hole_bytes = hole_bytes_;
  if (started_ns_ != 0) r.elapsed_ms = ((finished_ns_ != 0 ? finished_ns_ : monotonic_ns()) - started_ns_) / 1000000;
  size_t at = 0;
  // This restripe's members: the highest indices, from old_count_ on.
  for (auto it = added_paths_.lower_bound(old_count_); it != added_paths_.end(); ++it) {
    const std::string& p = it->second;
    if (at + p.size() + 1 >= sizeof r.new_members) break;
    std::memcpy(r.new_members + at, p.c_str(), p.size() + 1);
    at += p.size() + 1;
  }
  std::snprintf(r.message, sizeof r.message, "%s", message_.c_str());
  return r;
}

std::string OnlineRestripe::holds_members(const std::string& what) const {
  if (busy()) return "members are being added online: " + what + " once the restripe is done";
  if (vr_.engine->map().restriping())
    return "cannot " + what + " now: an online restripe of this mount stopped part-way: unmount the volume and "
           "finish it first with 'peregrine grow --add NEW... MEMBER...' over all its members, the added ones too";
  return "";
}

std::string OnlineRestripe::member_path(uint32_t index) const {
  MutexLock lock(mu_);
  auto it = added_paths_.find(index);
  return it == added_paths_.end() ? "" : it->second;
}

RestripeIoctl OnlineRestripe::start(const RestripeIoctl& request) {
  const std::vector<std::string> paths = paths_of(request);
  if (paths.empty()) return refused_restripe(EINVAL, "no members to add");
  MutexLock layout(layout_mu_);
  {
    MutexLock lock(mu_);
    if (state_ == kRestripeMoving) return refused_restripe(EBUSY, "a restripe is in progress (" + message_ + ")");
    if (stop_) return refused_restripe(ESHUTDOWN, "the volume is being unmounted");
  }
  if (thread_.joinable()) thread_.join();  // the last restripe's, finished
  // A finished restripe left one layout over all the drives, and the
  // volume, its members and the metadata as a mount over them has them:
  // another may start. One that stopped part-way keeps its two layouts
  // until the offline command finishes it, and one refused after the
  // engine took a drive keeps that drive: this mount adds no more.
  if (start_) {
    MutexLock lock(mu_);
    if (state_ != kRestripeDone) return refused_restripe(EBUSY, message_);
    start_.reset();
  }
  if (std::string busy = other_busy_(); !busy.empty()) return refused_restripe(EBUSY, busy);
  Engine& engine = *vr_.engine;
  if (engine.config().scheduler != Scheduler::per_drive)
    return refused_restripe(
        EOPNOTSUPP,
        "engine.scheduler = per-volume cannot restripe a mounted volume: unmount it and run 'peregrine "
        "grow --add NEW... MEMBER...'");
  const uint32_t n_old = vr_.volume.superblock.member_count();
  auto st = start_online_restripe(vr_.volume, paths, (request.flags & kRestripeForce) != 0);
  if (!st) return refused_restripe(st.status().errnum() != 0 ? st.status().errnum() : EINVAL, st.status().message());
  // Nothing of the volume's is written yet. Once the engine has taken a
  // drive over a new member, that member's file stays open, and this mount
  // cannot try again.
  uint32_t drives_taken = 0;
  for (uint32_t i = 0; i < st->added.size(); ++i) {
    MemberFile& file = st->added[i];
    DriveSpec spec = drive_spec_for(settings_, file);
    auto ring = UringDeviceFactory::open_ring(spec);
    Status s = ring ? Status::ok() : ring.status();
    std::unique_ptr<DeviceQueue> device;
    if (s) device = std::move(*ring);
    if (s && vr_.join_layers) {
      // Tests only: the power-cut layer over the new member, as over the others.
      auto layered = vr_.join_layers(file, n_old + i, std::move(device));
      if (layered)
        device = std::move(*layered);
      else
        s = layered.status();
    }
    if (s) s = engine.add_drive(spec, std::move(device));
    if (s) {
      ++drives_taken;
      continue;
    }
    const std::string why = "new member " + file.info().path + ": " + s.message();
    log_(LOG_ERR, "online restripe: " + why);
    if (drives_taken == 0) {
      for (const std::string& p : st->created) ::unlink(p.c_str());
      return refused_restripe(s.errnum() != 0 ? s.errnum() : EIO, why);
    }
    start_.emplace(std::move(*st));
    set_state(kRestripeRefused, why + "; nothing was written to the volume, but this mount cannot add members "
                                      "again (remount it first)");
    return refused_restripe(s.errnum() != 0 ? s.errnum() : EIO, why);
  }
  start_.emplace(std::move(*st));
  via_ = vr_.pool->acquire();
  if (via_ == nullptr) {
    set_state(kRestripeRefused, "no free engine submitter; this mount cannot add members again (remount it first)");
    return refused_restripe(EAGAIN, "no free engine submitter for the restripe");
  }
  // Discards bypass the engine and its fence: none from here to the end.
  vr_.io->stop_discards();
  const uint32_t n_new = start_->sb.member_count();
  if (Status s = engine.begin_restripe(n_new, *via_); !s) {
    vr_.io->resume_discards();
    vr_.pool->release(via_);
    via_ = nullptr;
    const std::string why = s.message() + "; nothing was written to the volume";
    set_state(kRestripeRefused, why + ", but this mount cannot add members again (remount it first)");
    log_(LOG_ERR, "online restripe: " + why);
    return refused_restripe(s.errnum() != 0 ? s.errnum() : EIO, why);
  }
  std::vector<std::string> added;
  for (const MemberFile& f : start_->added) added.push_back(f.info().path);
  vr_.io->add_members(std::move(start_->added));
  for (uint32_t i = 0; i < added.size(); ++i)
    if (named_) named_(n_old + i, added[i]);
  const uint64_t unit = start_->sb.stripe_unit;
  const uint64_t units = start_->sb.member_data_size / unit * n_old;
  {
    MutexLock lock(mu_);
    state_ = kRestripeMoving;
    message_ = "moving the volume's stripe units onto " + std::to_string(n_new) + " members";
    old_count_ = n_old;
    new_count_ = n_new;
    for (uint32_t i = 0; i < added.size(); ++i) added_paths_[n_old + i] = added[i];
    rate_ = request.rate_limit_bytes;
    started_ns_ = monotonic_ns();
    finished_ns_ = 0;
    total_bytes_ = units > n_old ? (units - n_old) * unit : 0;
    done_bytes_.store(0, std::memory_order_relaxed);
    windows_.store(0, std::memory_order_relaxed);
    old_data_area_ = md_.data_size();
    hole_bytes_ = 0;
  }
  busy_.store(true, std::memory_order_release);
  std::string names;
  for (const std::string& p : added) names += (names.empty() ? "" : ", ") + p;
  log_(LOG_NOTICE, "online restripe from " + std::to_string(n_old) + " onto " + std::to_string(n_new) +
                       " members started (adding " + names + "): " + format_size(status().total_bytes) +
                       " to move" + (request.rate_limit_bytes != 0 ? ", at most " + format_size(request.rate_limit_bytes) + "/s" : ""));
  if (const char* stop = test_hook(kRestripeStopEnv))
    log_(LOG_WARNING, std::string("TEST ONLY: ") + kRestripeStopEnv + "=" + stop);
  thread_ = std::thread([this] { run(); });
  return status();
}

void OnlineRestripe::stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// Holds the move to the asked rate; stop() cuts a wait short.
void OnlineRestripe::pace() {
  MutexLock lock(mu_);
  if (rate_ == 0) return;
  const uint64_t due_ns = started_ns_ + done_bytes_.load() * 1000000000 / rate_;
  const uint64_t now = monotonic_ns();
  if (due_ns <= now) return;
  lock.wait_for(stop_cv_, std::chrono::nanoseconds(due_ns - now), [&] {
    mu_.assert_held();
    return stop_;
  });
}

void OnlineRestripe::run() {
  Engine& engine = *vr_.engine;
  OnlineRestripeHooks hooks;
  hooks.close_window = [&](uint64_t begin, uint64_t end) { engine.close_window(begin, end); };
  hooks.open_window = [&](uint64_t cursor) { engine.open_window(cursor, *via_); };
  // Tests only: "give-up:W" stops the move after window W, as an IO error
  // would, while the mount goes on.
  uint64_t give_up_after = UINT64_MAX;
  if (const char* stop = test_hook(kRestripeStopEnv); stop != nullptr && std::string_view(stop).starts_with("give-up:"))
    give_up_after = std::strtoull(stop + 8, nullptr, 10);
  hooks.stop_requested = [&] {
    MutexLock lock(mu_);
    return stop_ || windows_.load(std::memory_order_relaxed) >= give_up_after;
  };
  hooks.pace = [&] { pace(); };
  // Busy: the volume did IO of its own since the last window (the move's
  // goes past the engine, so every IO the drives counted is someone
  // else's).
  auto volume_ios = [&] {
    uint64_t n = 0;
    for (uint32_t d = 0; d < engine.drive_count(); ++d) n += engine.stats(d).ios;
    return n;
  };
  uint64_t seen_ios = volume_ios();
  hooks.volume_busy = [&] {
    const uint64_t now = volume_ios();
    const bool busy = now != seen_ios;
    seen_ios = now;
    return busy;
  };
  // Called once before the first window, then after each.
  bool before_first = true;
  hooks.progress = [&](uint64_t done, uint64_t) {
    done_bytes_.store(done, std::memory_order_relaxed);
    if (!before_first) windows_.fetch_add(1, std::memory_order_relaxed);
    before_first = false;
  };
  // The volume stops taking changes, as when a journal write fails:
  // what would be written from now on could be lost to the offline
  // command, so nothing is.
  bool fenced = false;
  hooks.cursor_unsafe = [&](const Status& why) {
    fenced = true;
    md_.stop_changes();
    log_(LOG_CRIT, "online restripe: " + why.message() +
                       ". The volume is now read-only so that no write is lost: changes fail with EROFS and fsync "
                       "with EIO. Unmount, check the members, and run 'peregrine grow --add' over them");
  };
  // Tests only: "fail-cursor:W" fails window W's cursor once every copy
  // holds it, as a drive whose sync fails after the write landed;
  // "fail-cursor-back:W" fails setting it back too, with every copy
  // left saying the window moved.
  uint64_t fail_cursor_of = UINT64_MAX, cursors = 0;
  if (const char* stop = test_hook(kRestripeStopEnv);
      stop != nullptr && std::string_view(stop).starts_with("fail-cursor")) {
    const std::string_view hook(stop);
    const bool back_too = hook.starts_with("fail-cursor-back:");
    fail_cursor_of = std::strtoull(stop + (back_too ? 17 : 12), nullptr, 10);
    hooks.cursor_written = [&]() -> Status {
      if (cursors++ != fail_cursor_of) return Status::ok();
      return Status::error(EIO, "TEST ONLY: the cursor of window " + std::to_string(fail_cursor_of) + " failed");
    };
    if (back_too)
      hooks.set_cursor_back = [] { return Status::error(EIO, "TEST ONLY: setting the cursor back failed"); };
  }
  // Tests only: "K" stops after copy K of the run, "commit:K" after copy K
  // of the commit.
  int stop_at = 0, stop_at_commit = 0, last_step = 0, commit_base = -1;
  if (const char* stop = test_hook(kRestripeStopEnv);
      stop != nullptr && give_up_after == UINT64_MAX && fail_cursor_of == UINT64_MAX) {
    const std::string hook(stop);
    if (hook.starts_with("commit:"))
      stop_at_commit = std::atoi(hook.c_str() + 7);
    else
      stop_at = std::atoi(hook.c_str());
    hooks.after_step = [&](int step) {
      last_step = step;
      if (step == stop_at || (commit_base >= 0 && step - commit_base == stop_at_commit)) ::_exit(9);
    };
    hooks.committing = [&] { commit_base = last_step; };
  }
  windows_.store(0);
  RestripeResult moved;
  auto committed = run_online_restripe(vr_.volume.members, *start_, kWindowBytes, hooks, &moved);
  if (!committed) {
    const std::string message =
        "the restripe stopped: " + committed.status().message() +
        (fenced ? ". The volume is read-only (changes fail with EROFS, fsync with EIO) over its "
                : ". The volume goes on over its ") +
        std::to_string(start_->sb.member_count()) +
        " members until it is unmounted; it then mounts only once 'peregrine grow --add' has run over them "
        "(it resumes where this stopped)";
    log_(LOG_ERR, "online restripe: " + message);
    busy_.store(false, std::memory_order_release);
    set_state(kRestripeStopped, message);
    return;
  }
  finish(*committed, moved.hole_bytes);
}

void OnlineRestripe::finish(const Superblock& committed, uint64_t hole_bytes) {
  MutexLock layout(layout_mu_);
  Engine& engine = *vr_.engine;
  engine.finish_restripe();
  // The config gives the watermarks per drive: batch for N + k drives now,
  // as a mount over them would.
  const EngineConfig grown = config::engine_config(settings_, committed.member_count());
  engine.set_watermarks(grown.low_watermark, grown.high_watermark);
  vr_.io->resume_discards();
  vr_.pool->release(via_);
  via_ = nullptr;
  // What online grow and replace read of the volume from now on.
  AssembledVolume& vol = vr_.volume;
  vol.superblock = committed;
  vol.geometry = committed.geometry();
  vol.member_superblocks.resize(committed.member_count());
  for (uint32_t i = 0; i < committed.member_count(); ++i) {
    Superblock& sb = vol.member_superblocks[i];
    sb = committed;
    sb.member_index = i;
    sb.member_uuid = committed.member_uuids[i];
  }
  vr_.meta_geometry.member_count = committed.member_count();
  const uint64_t data_area = engine.map().volume_size() - vr_.meta_geometry.data_offset;
  vr_.meta_geometry.data_size = data_area;
  std::string message = "restriped onto " + std::to_string(committed.member_count()) + " members; data area " +
                        format_size(status().old_data_area) + " -> " + format_size(data_area);
  md_.follow_restripe(vr_.meta_geometry.stripe_width());
  if (int rc = md_.grow_data_area(data_area); rc != 0)
    message += " on the superblocks, but the mounted metadata could not take it (" + std::string(std::strerror(-rc)) +
               "); the space is used from the next mount";
  {
    MutexLock lock(mu_);
    new_data_area_ = data_area;
    hole_bytes_ = hole_bytes;
    done_bytes_.store(total_bytes_, std::memory_order_relaxed);
  }
  log_(LOG_NOTICE, "online restripe done: " + message);
  busy_.store(false, std::memory_order_release);
  set_state(kRestripeDone, message);
}

// On a classic worker or a blocking-op thread (as every ioctl).
void serve_restripe_ioctl(fuse_req_t req, unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  FsContext& fs = context(req);
  if (!admit_member_ioctl(req, flags, in_bufsz, out_bufsz, sizeof(RestripeIoctl), fs.online_restripe != nullptr))
    return;
  auto request = std::make_unique<RestripeIoctl>();
  std::memcpy(request.get(), in_buf, sizeof *request);
  RestripeIoctl reply{};
  if (request->op == kRestripeStart)
    reply = fs.online_restripe->start(*request);
  else if (request->op == kRestripeStatus)
    reply = fs.online_restripe->status();
  else
    reply = refused_restripe(EINVAL, "unknown restripe request " + std::to_string(request->op));
  fuse_reply_ioctl(req, 0, &reply, sizeof reply);
}

}  // namespace peregrine::fs
