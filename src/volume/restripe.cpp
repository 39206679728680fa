#include "peregrine/volume/restripe.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <span>
#include <thread>

#include "member_identity.h"
#include "member_refusal.h"
#include "member_zero.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/copy_restore.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/size_text.h"
#include "restripe_map.h"
#include "restripe_state.h"
#include "restripe_window.h"
#include "signature_probe.h"

namespace peregrine {
namespace {

// Removes the new members this run created unless they were kept (from
// the first superblock copy that names them on).
class CreatedFiles {
 public:
  void add(std::string path) { paths_.push_back(std::move(path)); }
  void keep() { paths_.clear(); }
  const std::vector<std::string>& paths() const { return paths_; }
  bool created(const std::string& p) const { return std::find(paths_.begin(), paths_.end(), p) != paths_.end(); }
  ~CreatedFiles() {
    for (const std::string& p : paths_) ::unlink(p.c_str());
  }

 private:
  std::vector<std::string> paths_;
};

// Writes superblock copies, each durable (written, synced, read back).
class CopyWriter {
 public:
  CopyWriter(std::vector<MemberFile>& members, uint64_t& generation, const std::function<void(int)>& after_step)
      : members_(members), generation_(generation), after_step_(after_step) {}

  // Every copy of every member, in `order`, as `sb` says for that member.
  // `parallel`: the members at once, each its primary then its backup (a
  // cursor may advance in any order across members); the test hook
  // after_step makes it one copy after the other, to stop between any two.
  Status write_all(Superblock sb, const std::vector<uint32_t>& order, bool parallel = false) {
    sb.generation = ++generation_;
    if (parallel && !after_step_) {
      return on_member_threads(static_cast<uint32_t>(order.size()), [&](uint32_t k) -> Status {
        Superblock own = sb;
        own.member_index = order[k];
        own.member_uuid = own.member_uuids[order[k]];
        for (uint64_t offset : {kPrimarySuperblockOffset, kBackupSuperblockOffset})
          if (Status s = write_durable_superblock_copy(members_[order[k]], own, offset); !s) return s;
        return Status::ok();
      });
    }
    for (uint32_t i : order) {
      sb.member_index = i;
      sb.member_uuid = sb.member_uuids[i];
      for (uint64_t offset : {kPrimarySuperblockOffset, kBackupSuperblockOffset}) {
        if (Status s = write_durable_superblock_copy(members_[i], sb, offset); !s) return s;
        if (after_step_) after_step_(++step_);
      }
    }
    return Status::ok();
  }

 private:
  std::vector<MemberFile>& members_;
  uint64_t& generation_;
  const std::function<void(int)>& after_step_;
  int step_ = 0;
};

// The added members first, in the prepare and in the commit: then the old
// members carry the record from the first copy that tells the volume
// changed to the last, and a mount given only them refuses it as an
// interrupted restripe (not as "members missing").
std::vector<uint32_t> added_first(uint32_t n_old, uint32_t n_new) {
  std::vector<uint32_t> order;
  for (uint32_t i = n_old; i < n_new; ++i) order.push_back(i);
  for (uint32_t i = 0; i < n_old; ++i) order.push_back(i);
  return order;
}

std::vector<uint32_t> index_order(uint32_t n) {
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

// The copy the commit writes: N + k members, no record.
Expected<Superblock> committed(const Superblock& sb) {
  Superblock done = sb;
  done.features_incompat &= ~kIncompatRestripe;
  done.restripe_old_count = 0;
  done.restripe_cursor = 0;
  done.features_incompat &= ~kIncompatMetaPartialRow;  // set again below if still so
  if (sb.meta_size % (uint64_t{sb.stripe_unit} * sb.member_count()) != 0)
    done.features_incompat |= kIncompatMetaPartialRow;
  if (Status s = validate_superblock(done); !s) return Status::error(EINVAL, "internal: " + s.message());
  return done;
}

// What a finished restripe reports of the volume (`sb`: with the record).
void describe_volume(const Superblock& sb, const std::vector<MemberFile>& members, RestripeResult& r) {
  r.volume_uuid = sb.volume_uuid;
  r.old_count = sb.restripe_old_count;
  r.new_count = sb.member_count();
  r.member_data_size = sb.member_data_size;
  r.meta_size = sb.meta_size;
  for (const MemberFile& m : members) r.members.push_back(m.info().path);
}

RestripeMap map_of(const Superblock& sb) {
  return RestripeMap{sb.restripe_old_count, sb.member_count(), sb.stripe_unit, sb.data_start,
                     sb.member_data_size / sb.stripe_unit};
}

class Restriper {
 public:
  Restriper(const RestripeOptions& o, RestripeVolume& vol)
      : o_(o), vol_(vol), copies_(vol.members, vol.generation, o.after_step) {}

  Status run(RestripeResult& r) {
    const Superblock& sb = vol_.sb;
    const uint32_t n_old = sb.restripe_old_count, n_new = sb.member_count();
    auto done = committed(sb);
    if (!done) return done.status();

    if (vol_.phase == RestripeVolume::Phase::preparing) {
      // Until an old member's copy carries the record, the old volume is
      // untouched and mounts as it was.
      Superblock start = sb;
      start.restripe_cursor = 0;
      if (Status s = copies_.write_all(start, added_first(n_old, n_new)); !s) return s;
      vol_.phase = RestripeVolume::Phase::moving;
      vol_.sb.restripe_cursor = 0;
    }
    if (vol_.phase == RestripeVolume::Phase::moving) {
      RestripeMap map = map_of(sb);
      const uint64_t max_units = std::max<uint64_t>(o_.max_window_bytes / sb.stripe_unit, 1);
      RestripeMover mover(map, vol_.members, max_units);
      uint64_t cursor = vol_.sb.restripe_cursor;
      if (Status s = mover.plan(cursor); !s) return s;
      if (o_.progress) o_.progress(0, mover.total_data_bytes());
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t end = mover.window_end(cursor);
      if (cursor < end)
        if (Status s = mover.read(0, cursor, end); !s) return s;
      for (int slot = 0; cursor < map.end(); slot ^= 1) {
        // The next window is read while this one is written (restripe_window.h).
        const uint64_t next_end = end < map.end() ? mover.window_end(end) : end;
        Status next_read = Status::ok();
        std::jthread reader;
        if (end < next_end) reader = std::jthread([&, slot] { next_read = mover.read(slot ^ 1, end, next_end); });
        if (Status s = mover.write(slot, cursor, end, o_.after_window_written); !s) return s;
        Superblock next = vol_.sb;
        next.restripe_cursor = end;
        if (Status s = copies_.write_all(next, index_order(n_new), /*parallel=*/true); !s) return s;
        vol_.sb.restripe_cursor = cursor = end;
        ++r.windows;
        if (reader.joinable()) reader.join();
        if (!next_read) return next_read;
        if (o_.progress) o_.progress(mover.data_bytes(), mover.total_data_bytes());
        end = next_end;
      }
      r.copy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.data_bytes = mover.data_bytes();
      r.hole_bytes = mover.hole_bytes();
    }
    // The commit: each copy rewritten for N + k members. Copies with the
    // record at its end and copies without it describe the same bytes.
    if (Status s = copies_.write_all(*done, added_first(n_old, n_new)); !s) return s;
    describe_volume(sb, vol_.members, r);
    return Status::ok();
  }

 private:
  const RestripeOptions& o_;
  RestripeVolume& vol_;
  CopyWriter copies_;
};

bool same_file(const MemberIdentity& a, const MemberFile& m) {
  if (a.is_block_device != m.info().is_block_device) return false;
  return a.is_block_device ? a.dev == m.info().dev : (a.dev == m.info().dev && a.ino == m.info().ino);
}

// A new member: created when it is a missing regular file, then checked as
// mkfs checks a member. Nothing is written to it here.
Expected<MemberFile> open_new_member(bool force, const MemberIdentity& id, const AssembledVolume& vol,
                                     CreatedFiles& created) {
  const std::string& path = id.path;
  const uint64_t needed = vol.superblock.member_bytes_needed();
  if (!id.exists) {
    std::filesystem::path dir = std::filesystem::path(id.absolute).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      return refuse_new_member(path, "does not exist, and " + dir.string() + " is not a directory to create it in");
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return refuse_new_member(path, std::string("cannot create: ") + std::strerror(errno));
    created.add(path);
    // As large as the largest member: a later `peregrine grow` then finds
    // the space the others have.
    uint64_t size = needed;
    for (const MemberFile& m : vol.members) size = std::max(size, m.info().size_bytes);
    int rc = ::ftruncate(fd, static_cast<off_t>(size));
    int e = errno;
    ::close(fd);
    if (rc != 0) return refuse_new_member(path, "cannot set size to " + format_size(size) + ": " + std::strerror(e));
  }
  auto file = open_member_locked(path, MemberFile::Mode::read_write);
  if (!file) return Status::error(file.status().errnum(), "new " + file.status().message());
  if (file->info().logical_block_size > kBlockSize)
    return refuse_new_member(path, "logical block size " + std::to_string(file->info().logical_block_size) +
                                       " is larger than the volume block size " + std::to_string(kBlockSize));
  if (file->info().size_bytes < needed)
    return refuse_new_member(path, "too small (" + std::to_string(file->info().size_bytes) +
                                       " bytes); every member needs " + std::to_string(needed) + " bytes (" +
                                       format_size(needed) + ")");
  auto sbs = read_member_superblocks(*file);
  if (!sbs) return sbs.status();
  const SuperblockCopy& copy = sbs->primary.superblock ? sbs->primary : sbs->backup;
  // Left by this command, stopped before any member of the volume named it.
  const bool earlier_attempt = copy.superblock && copy.superblock->restriping() &&
                               copy.superblock->volume_uuid == vol.superblock.volume_uuid &&
                               copy.superblock->member_index >= vol.superblock.member_count();
  if (sbs->any_magic() && !earlier_attempt && !force) {
    if (copy.superblock)
      return refuse_new_member(path, "already member " + std::to_string(copy.superblock->member_index) + " of " +
                                         std::to_string(copy.superblock->member_count()) + " of peregrine volume " +
                                         copy.superblock->volume_uuid.to_string() + " (use --force to overwrite)");
    return refuse_new_member(path, "holds a damaged peregrine superblock (use --force to overwrite)");
  }
  if (!sbs->any_magic() && !force && !created.created(path)) {
    auto found = probe_foreign_signature(path);
    if (!found) return found.status();
    if (*found) return refuse_new_member(path, "holds " + **found + " (use --force to overwrite)");
  }
  return std::move(*file);
}

Status prepare_members(const RestripeOptions& o, RestripeVolume& r) {
  if (!o.prepare_member) return Status::ok();
  for (uint32_t i = 0; i < r.members.size(); ++i)
    if (Status s = o.prepare_member(r.members[i], i); !s) return s;
  return Status::ok();
}

// The members to add, opened and checked, with the superblock that names
// them (the record, cursor 0): nothing written yet. The old volume must be
// whole and sound.
struct AddedMembers {
  std::vector<MemberFile> files;
  Superblock sb;
  uint64_t generation = 0;
};

Expected<AddedMembers> open_added_members(bool force, const std::vector<std::string>& new_members,
                                          const AssembledVolume& vol, CreatedFiles& created) {
  if (!vol.damaged_copies.empty())
    return Status::error(EUCLEAN, vol.damaged_copies.front().problem +
                                      "; run 'peregrine fsck' over the members first, then add members");
  if (!vol.interrupted_grow.empty())
    return Status::error(EINVAL, vol.interrupted_grow + ". Finish that grow first ('peregrine grow MEMBER...')");
  if (new_members.empty()) return Status::error(EINVAL, "no members to add");
  const uint32_t n_old = vol.superblock.member_count();
  const size_t n_new = n_old + new_members.size();
  if (n_new > kMaxMembers)
    return Status::error(
        EINVAL, "a volume holds at most " + std::to_string(kMaxMembers) + " members, not " + std::to_string(n_new));
  auto ids = identify_members(new_members, /*allow_missing=*/true);
  if (!ids) return Status::error(ids.status().errnum(), "new " + ids.status().message());
  for (const MemberIdentity& id : *ids)
    for (const MemberFile& m : vol.members)
      if (id.exists && same_file(id, m))
        return refuse_new_member(id.path, "same " + std::string(id.is_block_device ? "device" : "file") +
                                              " as member " + m.info().path + ", already in the volume");
  AddedMembers r;
  r.sb = vol.superblock;
  for (const MemberIdentity& id : *ids) {
    auto file = open_new_member(force, id, vol, created);
    if (!file) return file.status();
    r.files.push_back(std::move(*file));
    auto uuid = Uuid::random();
    if (!uuid) return uuid.status();
    r.sb.member_uuids.push_back(*uuid);
  }
  r.sb.features_incompat |= kIncompatRestripe;
  r.sb.restripe_old_count = n_old;
  r.sb.restripe_cursor = 0;
  for (const Superblock& s : vol.member_superblocks) r.generation = std::max(r.generation, s.generation);
  if (Status s = validate_superblock(r.sb); !s) return Status::error(EINVAL, "internal: " + s.message());
  return r;
}

// The new members' header regions (an old superblock or mount record
// there must never pass for this volume's) and their last MiB, as mkfs
// zeroes them; their data areas are written unit by unit by the move.
Status zero_added_members(std::span<const MemberFile> added, const Superblock& sb) {
  AlignedBuffer zeros(1 << 20);
  for (const MemberFile& m : added) {
    const uint64_t end = m.info().size_bytes / kBlockSize * kBlockSize;
    const uint64_t tail = std::max(sb.member_bytes_needed(), end > kTailWipe ? end - kTailWipe : 0);
    if (Status s = zero_member_range(m, 0, sb.data_start, zeros); !s) return s;
    if (Status s = zero_member_range(m, tail, end, zeros); !s) return s;
    if (Status s = sync_member(m); !s) return s;
  }
  return Status::ok();
}

// The old volume, whole and sound, and the new members checked: the
// restripe as it starts (nothing written yet).
Expected<RestripeVolume> start_restripe(const RestripeOptions& o, AssembledVolume& vol, CreatedFiles& created) {
  auto added = open_added_members(o.force, o.new_members, vol, created);
  if (!added) return added.status();
  RestripeVolume r;
  r.sb = added->sb;
  r.generation = added->generation;
  r.members = std::move(vol.members);
  for (MemberFile& f : added->files) r.members.push_back(std::move(f));
  r.phase = RestripeVolume::Phase::preparing;
  if (Status s = prepare_members(o, r); !s) return s;
  if (Status s = zero_added_members(std::span(r.members).subspan(r.sb.restripe_old_count), r.sb); !s) return s;
  return r;
}

}  // namespace

Expected<RestripeResult> restripe_volume(const RestripeOptions& o) {
  if (o.members.empty()) return Status::error(EINVAL, "no members given");
  if (o.new_members.empty()) return Status::error(EINVAL, "no members to add");
  std::vector<std::string> all = o.members;
  all.insert(all.end(), o.new_members.begin(), o.new_members.end());
  if (auto ids = identify_members(all, /*allow_missing=*/true); !ids) return ids.status();

  RestripeResult result;
  CreatedFiles created;
  auto vol = assemble(o.members, MemberFile::Mode::read_write);
  if (!vol && vol.status().errnum() == ENODEV) {
    // Members missing: perhaps this restripe finished before, and the
    // volume now counts the added members too.
    vol = Status::error(0, "");
    if (auto done = assemble(all, MemberFile::Mode::read_only); done && !done->superblock.restriping()) {
      if (!done->damaged_copies.empty()) {
        // The commit's last copy, torn by a power cut: this run finishes
        // the commit by restoring it (the volume assembled without it).
        done = Status::error(0, "");
        if (Status s = restore_damaged_copies(all, o.note); !s) return s;
        done = assemble(all, MemberFile::Mode::read_only);
        if (!done) return done.status();
      }
      result.already_done = true;
      result.volume_uuid = done->superblock.volume_uuid;
      result.new_count = done->superblock.member_count();
      result.old_count = static_cast<uint32_t>(o.members.size());
      result.member_data_size = done->superblock.member_data_size;
      result.meta_size = done->superblock.meta_size;
      for (const MemberFile& m : done->members) result.members.push_back(m.info().path);
      return result;
    }
    vol = assemble(o.members, MemberFile::Mode::read_write);
  }
  Expected<RestripeVolume> state = Status::error(EINVAL, "");
  if (!vol && vol.status().errnum() == EINPROGRESS) {
    // Stopped part-way: the same command resumes from its superblock
    // copies, whichever of the given paths were old or new.
    state = assemble_restripe(all);
    if (!state) return state.status();
    if (Status s = prepare_members(o, *state); !s) return s;
    result.resumed = true;
    if (o.note)
      o.note("resuming the interrupted restripe of volume " + state->sb.volume_uuid.to_string() + " from " +
             std::to_string(state->sb.restripe_old_count) + " onto " + std::to_string(state->sb.member_count()) +
             " members");
  } else {
    if (!vol) return vol.status();
    if (o.note)
      for (const std::string& w : vol->warnings) o.note(w);
    state = start_restripe(o, *vol, created);
    if (!state) return state.status();
  }
  if (o.note)
    for (const std::string& w : state->warnings) o.note(w);
  created.keep();
  Restriper r(o, *state);
  if (Status s = r.run(result); !s) return s;
  return result;
}

Expected<OnlineRestripeStart> start_online_restripe(const AssembledVolume& vol,
                                                    const std::vector<std::string>& new_members, bool force) {
  CreatedFiles created;
  auto added = open_added_members(force, new_members, vol, created);
  if (!added) return added.status();
  if (Status s = zero_added_members(added->files, added->sb); !s) return s;
  OnlineRestripeStart start;
  start.sb = added->sb;
  start.generation = added->generation;
  start.added = std::move(added->files);
  start.created = created.paths();
  created.keep();
  return start;
}

Expected<Superblock> run_online_restripe(std::vector<MemberFile>& members, OnlineRestripeStart& start,
                                         uint64_t max_window_bytes, const OnlineRestripeHooks& hooks,
                                         RestripeResult* result) {
  const Superblock& sb = start.sb;
  const uint32_t n_old = sb.restripe_old_count, n_new = sb.member_count();
  if (members.size() != n_new)
    return Status::error(EINVAL, "internal: " + std::to_string(members.size()) + " members for a restripe onto " +
                                     std::to_string(n_new));
  auto done = committed(sb);
  if (!done) return done.status();
  CopyWriter copies(members, start.generation, hooks.after_step);
  // The record, the added members first (restripe_volume's prepare).
  if (Status s = copies.write_all(sb, added_first(n_old, n_new)); !s) return s;

  const RestripeMap map = map_of(sb);
  // The holes of a member in use change under any plan made in advance:
  // each window's are looked for once it is closed (find_window_holes), so
  // a sparse member's holes are neither read nor filled with zeros.
  RestripeMover mover(map, members, std::max<uint64_t>(max_window_bytes / sb.stripe_unit, 1),
                      /*skip_holes=*/false);
  if (Status s = mover.plan(0); !s) return s;
  if (hooks.progress) hooks.progress(0, mover.total_data_bytes());
  const auto t0 = std::chrono::steady_clock::now();
  RestripeResult r;
  Superblock next = sb;
  for (uint64_t cursor = 0; cursor < map.end();) {
    if (hooks.stop_requested && hooks.stop_requested())
      return Status::error(ECANCELED, "stopped with " + std::to_string(cursor) + " of " + std::to_string(map.end()) +
                                          " stripe units moved");
    // Busy: the volume's requests wait on at most one window's units.
    // Idle: a reach of kHoleReach windows is closed, its holes found, and
    // up to one window of data moved from it, so a sparse volume moves in
    // few windows (each costs a sync of every member and a cursor).
    const bool busy = hooks.volume_busy && hooks.volume_busy();
    mover.set_gentle(busy);
    mover.forget_window_holes();  // the last window's, found while it was closed
    uint64_t end = busy ? mover.window_end(cursor) : mover.reach_end(cursor);
    hooks.close_window(cursor, end);
    Status moved = mover.find_window_holes(cursor, end);
    // Never past what was closed: beyond it the holes are not known.
    if (moved) end = std::min(end, mover.window_end(cursor));
    if (moved) moved = mover.read(0, cursor, end);
    if (moved) moved = mover.write(0, cursor, end, nullptr);
    if (moved) {
      next.restripe_cursor = end;
      moved = copies.write_all(next, index_order(n_new), /*parallel=*/true);
      if (moved && hooks.cursor_written) moved = hooks.cursor_written();
      if (!moved) {
        // Any copy may say `end` now (a sync can fail after its write
        // landed), and the window is served from its old places again: a
        // rerun resuming from `end` would lose what is written there from
        // now on. Every copy says `cursor` again, so it copies the window
        // anew.
        next.restripe_cursor = cursor;
        Status back = hooks.set_cursor_back ? hooks.set_cursor_back()
                                            : copies.write_all(next, index_order(n_new), /*parallel=*/true);
        if (!back) {
          moved = Status::error(moved.errnum(), moved.message() + "; setting the cursor back failed too (" +
                                                    back.message() + "), so a write to stripe units " +
                                                    std::to_string(cursor) + "-" + std::to_string(end - 1) +
                                                    " from now on might not survive the offline command");
          if (hooks.cursor_unsafe) hooks.cursor_unsafe(moved);
        }
      }
    }
    if (!moved) {
      // The window's old places are intact (a window overwrites only
      // units moved before it): serve it from where it was.
      hooks.open_window(cursor);
      return moved;
    }
    hooks.open_window(end);
    cursor = end;
    ++r.windows;
    // total_data_bytes() counts every unit here: holes are known a window at a time.
    if (hooks.progress) hooks.progress(mover.data_bytes() + mover.hole_bytes(), mover.total_data_bytes());
    if (hooks.pace) hooks.pace();
  }
  r.copy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.data_bytes = mover.data_bytes();
  r.hole_bytes = mover.hole_bytes();
  if (hooks.committing) hooks.committing();
  if (Status s = copies.write_all(*done, added_first(n_old, n_new)); !s) return s;
  describe_volume(sb, members, r);
  if (result != nullptr) *result = std::move(r);
  Superblock out = *done;
  out.member_index = 0;
  out.member_uuid = out.member_uuids[0];
  out.generation = start.generation;
  return out;
}

}  // namespace peregrine
