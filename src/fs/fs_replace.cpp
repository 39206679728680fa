// Online replace: OnlineReplace (online_replace.h) and the ioctl that
// drives it.
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "fs_context.h"
#include "online_replace.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/clock.h"
#include "peregrine/util/test_hooks.h"
#include "peregrine/volume/member_copy.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/mount_record.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::fs {
namespace {

constexpr const char* kStopEnv = "PEREGRINE_TEST_REPLACE_STOP_AFTER";
constexpr uint64_t kChunk = 256 << 10;  // one fence, one read, one write

ReplaceIoctl refused(int err, const std::string& why) {
  ReplaceIoctl r{};
  r.error = err;
  std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
  return r;
}

// Which member `path` names: the same device, or the same file.
std::optional<uint32_t> member_named(const std::vector<MemberFile>& members, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  for (uint32_t i = 0; i < members.size(); ++i) {
    const MemberInfo& m = members[i].info();
    if (S_ISBLK(st.st_mode) ? (m.is_block_device && m.dev == st.st_rdev)
                            : (!m.is_block_device && m.dev == st.st_dev && m.ino == st.st_ino))
      return i;
  }
  return std::nullopt;
}

// The test hook's step, or "".
std::string stop_step() {
  const char* s = test_hook(kStopEnv);
  return s == nullptr ? std::string() : std::string(s);
}

std::string io_error(const char* what, const MemberFile& m, uint64_t offset, int rc) {
  return std::string(what) + " member " + m.info().path + ": " + (rc > 0 ? "short transfer" : std::strerror(-rc)) +
         " at offset " + std::to_string(offset);
}

}  // namespace

OnlineReplace::OnlineReplace(VolumeRuntime& vr, const config::Settings& settings, Mutex& layout_mu, LogLine log,
                             std::function<void(uint32_t, const std::string&)> renamed)
    : vr_(vr), settings_(settings), layout_mu_(layout_mu), log_(std::move(log)), renamed_(std::move(renamed)) {}

OnlineReplace::~OnlineReplace() { stop(); }

void OnlineReplace::set_state(ReplaceState s, const std::string& message) {
  MutexLock lock(mu_);
  state_ = s;
  message_ = message;
  if (s == kReplaceDone || s == kReplaceFailed) finished_ns_ = monotonic_ns();
}

ReplaceIoctl OnlineReplace::status() const {
  MutexLock lock(mu_);
  ReplaceIoctl r{};
  r.state = state_;
  r.member_index = index_;
  r.done_bytes = done_bytes_.load(std::memory_order_relaxed);
  r.total_bytes = total_bytes_;
  r.rate_limit_bytes = rate_;
  std::snprintf(r.old_member, sizeof r.old_member, "%s", old_path_.c_str());
  std::snprintf(r.new_member, sizeof r.new_member, "%s", new_path_.c_str());
  if (started_ns_ != 0) r.elapsed_ms = ((finished_ns_ != 0 ? finished_ns_ : monotonic_ns()) - started_ns_) / 1000000;
  std::snprintf(r.message, sizeof r.message, "%s", message_.c_str());
  return r;
}

std::string OnlineReplace::holds_members(const std::string& what) const {
  if (busy()) return "a member is being replaced online: " + what + " once the replace is done";
  if (keeps_both_members()) return "cannot " + what + " now: " + std::string(status().message);
  return "";
}

ReplaceIoctl OnlineReplace::start(const ReplaceIoctl& request) {
  const std::string old_path(request.old_member, strnlen(request.old_member, sizeof request.old_member));
  const std::string new_path(request.new_member, strnlen(request.new_member, sizeof request.new_member));
  MutexLock layout(layout_mu_);
  {
    MutexLock lock(mu_);
    if (state_ == kReplaceCopying || state_ == kReplaceSwitching)
      return refused(EBUSY, "a replace of member " + std::to_string(index_) + " is in progress (" + message_ + ")");
    if (stop_) return refused(ESHUTDOWN, "the volume is being unmounted");
  }
  if (refuse_while_)
    if (std::string busy = refuse_while_(); !busy.empty()) return refused(EBUSY, busy);
  if (thread_.joinable()) thread_.join();  // the last replace's, finished
  // A switch that failed half-way keeps both members in use until the
  // volume is unmounted and the replace finished offline.
  if (new_) return refused(EBUSY, status().message);
  AssembledVolume& vol = vr_.volume;
  auto index = member_named(vol.members, old_path);
  if (!index) {
    std::string names;
    for (const MemberFile& m : vol.members) names += (names.empty() ? "" : ", ") + m.info().path;
    return refused(EINVAL, "old member " + old_path + ": not a member of this volume (its members: " + names + ")");
  }
  const MemberFile& old_file = vol.members[*index];
  const Superblock& old_sb = vol.member_superblocks[*index];
  auto prepared = prepare_new_member(
      NewMemberRequest{new_path, &old_file, &old_sb, &vol.members, (request.flags & kReplaceForce) != 0});
  if (!prepared)
    return refused(prepared.status().errnum() != 0 ? prepared.status().errnum() : EINVAL, prepared.status().message());
  DriveSpec spec = drive_spec_for(settings_, prepared->file);
  spec.queue_depth = std::max(spec.queue_depth, vr_.engine->stats(*index).queue_depth);
  auto opened_ring = UringDeviceFactory::open_ring(spec);
  if (!opened_ring)
    return refused(opened_ring.status().errnum(), "new member " + new_path + ": " + opened_ring.status().message());
  std::unique_ptr<DeviceQueue> ring = std::move(*opened_ring);
  if (vr_.join_layers) {
    // Tests only: NEW's undo log is the volume's member count's, as the
    // offline replace names it.
    auto layered = vr_.join_layers(prepared->file, vol.superblock.member_count(), std::move(ring));
    if (!layered) return refused(EIO, "new member " + new_path + ": " + layered.status().message());
    ring = std::move(*layered);
  }
  // An earlier copy of OLD is copied again: the volume changed since.
  if (prepared->has_superblock)
    if (Status s = clear_superblocks(prepared->file); !s) return refused(s.errnum(), s.message());
  auto fence = std::make_shared<MirrorFence>();
  if (Status s = vr_.engine->install_mirror(*index, std::move(ring), fence); !s)
    return refused(s.errnum() != 0 ? s.errnum() : EIO, "new member " + new_path + ": " + s.message());

  old_sb_ = old_sb;
  new_.emplace(std::move(*prepared));
  fence_ = std::move(fence);
  done_bytes_.store(0);
  {
    MutexLock lock(mu_);
    index_ = *index;
    rate_ = request.rate_limit_bytes;
    state_ = kReplaceCopying;
    message_ = "copying " + old_path + " to " + new_path;
    old_path_ = vr_.volume.members[*index].info().path;
    new_path_ = new_->file.info().path;
    started_ns_ = monotonic_ns();
    finished_ns_ = 0;
    total_bytes_ = old_sb_.member_bytes_needed() - kMountRecordOffset - kSuperblockSize;
  }
  busy_.store(true, std::memory_order_release);
  log_(LOG_NOTICE, "online replace of member " + std::to_string(index_) + " (" + old_path + ") by " + new_path +
                       " started: " + format_size(old_sb_.member_bytes_needed()) + " to copy" +
                       (rate_ != 0 ? ", at most " + format_size(rate_) + "/s" : ""));
  if (!stop_step().empty()) log_(LOG_WARNING, std::string("TEST ONLY: ") + kStopEnv + "=" + stop_step());
  thread_ = std::thread([this] { run(); });
  ReplaceIoctl r = status();
  return r;
}

std::string OnlineReplace::member_path(uint32_t index) const {
  MutexLock lock(mu_);
  for (const auto& [i, path] : replaced_)
    if (i == index) return path;
  return "";
}

void OnlineReplace::stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// Holds the copy to the asked rate; stop() cuts a wait short.
void OnlineReplace::pace() {
  if (rate_ == 0) return;
  MutexLock lock(mu_);
  const uint64_t due_ns = started_ns_ + done_bytes_.load() * 1000000000 / rate_;
  const uint64_t now = monotonic_ns();
  if (due_ns <= now) return;
  lock.wait_for(stop_cv_, std::chrono::nanoseconds(due_ns - now), [&] {
    mu_.assert_held();
    return stop_;
  });
}

// One chunk under the fence: no write to it is in flight meanwhile, and one
// through the ring that comes waits, so the copy cannot overtake it on NEW;
// one a thread makes itself marks the fence, and the chunk is copied again.
// A hole of a sparse OLD (no write reached it, or it would not be one) is
// zeroed on NEW, or left alone on a NEW this replace created.
Status OnlineReplace::copy_chunk(uint64_t begin, uint64_t end, bool fail_read) {
  const MemberFile& old_file = vr_.volume.members[index_];
  const MemberFile& new_file = new_->file;
  static thread_local AlignedBuffer buf(kChunk);
  const uint64_t len = end - begin;
  for (;;) {
    fence_->fence(begin, end);
    bool hole = false;
    if (!old_file.info().is_block_device) {
      const off_t data = ::lseek(old_file.fd(), static_cast<off_t>(begin), SEEK_DATA);
      hole = (data < 0 && errno == ENXIO) || (data >= 0 && static_cast<uint64_t>(data) >= end);
    }
    Status result = Status::ok();
    if (fail_read) {
      result = Status::error(EIO, io_error("cannot read old", old_file, begin, -EIO) + " (TEST ONLY: injected)");
    } else if (hole) {
      if (!new_->created.created()) {
        std::memset(buf.data(), 0, len);
        if (int rc = new_file.pwrite_full(buf.data(), len, begin); rc != 0)
          result = Status::error(rc < 0 ? -rc : EIO, io_error("cannot write new", new_file, begin, rc));
      }
    } else if (int rc = old_file.pread_full(buf.data(), len, begin); rc != 0) {
      result = Status::error(rc < 0 ? -rc : EIO, io_error("cannot read old", old_file, begin, rc));
    } else if (int rc2 = new_file.pwrite_full(buf.data(), len, begin); rc2 != 0) {
      result = Status::error(rc2 < 0 ? -rc2 : EIO, io_error("cannot write new", new_file, begin, rc2));
    }
    // A blocking write that met the fence may have landed on NEW before the
    // copy's older bytes: copy the chunk again.
    if (!fence_->release() || !result) return result;
  }
}

// Everything of OLD's but its two superblock blocks, as the offline copy:
// the mount record and the reserved header bytes, then the metadata and
// data areas.
Status OnlineReplace::copy_all() {
  const uint64_t needed = old_sb_.member_bytes_needed();
  const std::string stop = stop_step();
  const int stop_pct = stop.starts_with("copy:") ? std::atoi(stop.c_str() + 5) : -1;
  const int fail_pct = stop.starts_with("read-error:") ? std::atoi(stop.c_str() + 11) : -1;
  uint64_t total = 0;
  {
    MutexLock lock(mu_);
    total = total_bytes_;
  }
  const CopyRange ranges[] = {{kMountRecordOffset, kBackupSuperblockOffset},
                              {kBackupSuperblockOffset + kSuperblockSize, needed}};
  for (const CopyRange& r : ranges) {
    for (uint64_t at = r.begin; at < r.end; at += kChunk) {
      {
        MutexLock lock(mu_);
        if (stop_) return Status::error(ECANCELED, "the volume was unmounted before the copy was done");
      }
      const bool fail_read = fail_pct >= 0 && done_bytes_.load() * 100 >= total * static_cast<uint64_t>(fail_pct);
      if (Status s = copy_chunk(at, std::min(at + kChunk, r.end), fail_read); !s) return s;
      if (int e = fence_->secondary_error(); e != 0)
        return Status::error(
            -e, "new member " + new_->file.info().path + ": a write the volume sent it failed: " + std::strerror(-e));
      const uint64_t done = done_bytes_.fetch_add(std::min(kChunk, r.end - at)) + std::min(kChunk, r.end - at);
      if (stop_pct >= 0 && done * 100 >= total * static_cast<uint64_t>(stop_pct) && done < total) ::_exit(9);
      pace();
    }
  }
  if (Status s = wipe_new_member_tail(new_->file, needed); !s) return s;
  // From here on a flush of the drive reaches NEW too; this sync makes
  // durable what was written to it before.
  fence_->flush_both();
  if (Status s = sync_member(new_->file); !s) return s;
  if (stop == "copy") ::_exit(9);
  return Status::ok();
}

void OnlineReplace::give_up(const Status& why) {
  // Writes go to OLD alone again; NEW's ring closes once idle, then NEW.
  fence_->set_mode(MirrorMode::primary_only);
  fence_->wait_retired();
  const std::string new_path = new_->file.info().path;
  new_.reset();
  const std::string message = "gave up replacing member " + std::to_string(index_) + " (" +
                              vr_.volume.members[index_].info().path + ") by " + new_path + ": " + why.message() +
                              "; the volume goes on with the old member";
  log_(LOG_ERR, "online replace " + message);
  busy_.store(false, std::memory_order_release);
  set_state(kReplaceFailed, message);
}

void OnlineReplace::finish() {
  set_state(kReplaceSwitching, "switching the superblocks");
  const std::string stop = stop_step();
  MutexLock layout(layout_mu_);
  MemberFile& old_file = vr_.volume.members[index_];
  const std::string old_path = old_file.info().path;
  const std::string new_path = new_->file.info().path;
  // "fail:STEP": the switch fails after STEP, as a failed write there.
  const std::string fail = stop.starts_with("fail:") ? stop.substr(5) : std::string();
  bool new_has_superblock = false;
  auto committed = commit_replace(old_file, new_->file, old_sb_, [&](std::string_view step) {
    if (step == "new-primary") new_has_superblock = true;
    if (step == stop) ::_exit(9);
    if (step == fail) return Status::error(EIO, "TEST ONLY: failed after " + std::string(step));
    return Status::ok();
  });
  if (!committed) {
    if (!new_has_superblock) {
      give_up(committed.status());
      return;
    }
    // Both members claim the index now: keep writing to both, so that
    // either holds the volume, and let the user finish it offline. NEW
    // stays even if this replace created it: it may be the only member
    // left with the index's superblock, and the offline command needs it.
    new_->created.keep();
    const std::string message = "the switch of member " + std::to_string(index_) + " from " + old_path + " to " +
                                new_path + " failed: " + committed.status().message() +
                                "; writes still reach both members. Unmount the volume and run 'peregrine "
                                "replace' over its members with --old " +
                                old_path + " --new " + new_path + " to finish";
    log_(LOG_ERR, "online replace: " + message);
    keeps_both_.store(true, std::memory_order_release);
    busy_.store(false, std::memory_order_release);
    set_state(kReplaceFailed, message);
    return;
  }
  // On disk NEW is the member; now in memory too: the drive, discards, the
  // superblock copy, the member lock.
  fence_->set_mode(MirrorMode::secondary_only);
  fence_->wait_retired();
  new_->created.keep();
  vr_.io->swap_member(index_, new_->file);  // new_->file is OLD's now
  vr_.volume.member_superblocks[index_] = *committed;
  ::flock(new_->file.fd(), LOCK_UN);
  new_.reset();
  log_(LOG_NOTICE, "online replace: member " + std::to_string(index_) + " is " + new_path + " now; " + old_path +
                       " is no member and closed");
  {
    MutexLock lock(mu_);
    std::erase_if(replaced_, [&](const auto& r) { return r.first == index_; });
    replaced_.emplace_back(index_, new_path);
  }
  if (renamed_) renamed_(index_, new_path);
  busy_.store(false, std::memory_order_release);
  set_state(kReplaceDone, "member " + std::to_string(index_) + " replaced: " + old_path + " -> " + new_path);
}

void OnlineReplace::run() {
  Status copied = copy_all();
  if (!copied) {
    give_up(copied);
    return;
  }
  finish();
}

// On a classic worker or a blocking-op thread (as every ioctl).
void serve_replace_ioctl(fuse_req_t req, unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz) {
  FsContext& fs = context(req);
  if (!admit_member_ioctl(req, flags, in_bufsz, out_bufsz, sizeof(ReplaceIoctl), fs.online_replace != nullptr)) return;
  ReplaceIoctl request;
  std::memcpy(&request, in_buf, sizeof request);
  ReplaceIoctl reply{};
  if (request.op == kReplaceStart)
    reply = fs.online_replace->start(request);
  else if (request.op == kReplaceStatus)
    reply = fs.online_replace->status();
  else
    reply = refused(EINVAL, "unknown replace request " + std::to_string(request.op));
  fuse_reply_ioctl(req, 0, &reply, sizeof reply);
}

}  // namespace peregrine::fs
