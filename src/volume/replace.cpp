#include "peregrine/volume/replace.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>

#include "member_identity.h"
#include "member_refusal.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_examination.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/mount_record.h"
#include "peregrine/volume/replace_steps.h"
#include "peregrine/volume/size_text.h"

namespace peregrine {
namespace {

bool same_file(const MemberIdentity& a, const MemberIdentity& b) {
  if (!a.exists || !b.exists) return !a.exists && !b.exists && a.absolute == b.absolute;
  if (a.is_block_device != b.is_block_device) return false;
  return a.is_block_device ? a.dev == b.dev : (a.dev == b.dev && a.ino == b.ino);
}

bool is_file(const MemberFile& m, const MemberIdentity& id) {
  if (m.info().is_block_device != id.is_block_device) return false;
  return id.is_block_device ? m.info().dev == id.dev : (m.info().dev == id.dev && m.info().ino == id.ino);
}

Expected<MemberIdentity> identify(const std::string& path, bool allow_missing) {
  auto ids = identify_members({path}, allow_missing);
  if (!ids) return ids.status();
  return std::move(ids->front());
}

std::string when(uint64_t t) {
  char buf[32];
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// After an assembly that failed: did an earlier run already finish, so
// that OLD is no member and the volume assembles with NEW in its place?
std::optional<ReplaceResult> finished_before(const ReplaceOptions& o, const MemberIdentity& old_id) {
  auto old_exam = examine_member(o.old_member, false);
  if (!old_exam || old_exam->is_member() || old_exam->copies.any_magic()) return std::nullopt;
  std::vector<std::string> paths;
  for (const std::string& p : o.members) {
    auto id = identify(p, false);
    if (!id) return std::nullopt;
    paths.push_back(same_file(*id, old_id) ? o.new_member : p);
  }
  auto vol = assemble(paths, MemberFile::Mode::read_only);
  if (!vol) return std::nullopt;
  auto new_id = identify(o.new_member, false);
  if (!new_id) return std::nullopt;
  for (uint32_t i = 0; i < vol->members.size(); ++i) {
    if (!is_file(vol->members[i], *new_id)) continue;
    // A run stopped between OLD's last superblock copy and its mount
    // record (commit) left the record: it goes now.
    // Not clearing it leaves the replace done: said, not failed.
    if (auto seen = MemberFile::open(o.old_member, MemberFile::Mode::read_only); seen) {
      auto record = read_mount_record(*seen);
      if (!record || *record) {
        auto old_file = open_member_locked(o.old_member, MemberFile::Mode::read_write);
        Status cleared = old_file ? clear_mount_record(*old_file) : old_file.status();
        if (!cleared && o.note)
          o.note("old member " + o.old_member + ": cannot clear the mount record an interrupted replace left: " +
                 cleared.message());
      }
    }
    ReplaceResult r;
    r.already_done = true;
    r.member_index = i;
    r.member_count = vol->superblock.member_count();
    r.volume_uuid = vol->superblock.volume_uuid;
    r.member_uuid = vol->member_superblocks[i].member_uuid;
    return r;
  }
  return std::nullopt;
}

std::string last_mount_text(const MemberFile& m) {
  auto r = read_mount_record(m);
  if (!r) return "a damaged mount record";
  if (!*r) return "no mount recorded";
  return "last mounted " + when((*r)->mount_time) + " on " + (*r)->mountpoint;
}

// The copy of an interrupted replace no longer matches OLD: the volume was
// used (mounted, fsck) with one of them since, and only the user knows which.
Status refuse_diverged(const ReplaceOptions& o, uint32_t index, const MemberFile& old_file, const MemberFile& new_file,
                       const Status& difference) {
  return refuse_new_member(
      o.new_member,
      "already carries member index " + std::to_string(index) +
          " of this volume from an interrupted replace, but no longer holds the same bytes as the old member (" +
          difference.message() + "): the volume was used with one of them since (old member " + o.old_member + ": " +
          last_mount_text(old_file) + "; new member: " + last_mount_text(new_file) +
          "). If the old member holds the volume's current data, run this again with --force to copy it again; "
          "if the new one does, use it in place of the old one and clear the old one's superblocks (docs/usage.md, "
          "\"Replacing a member\")");
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Expected<ReplaceResult> commit(const ReplaceOptions& o, const MemberFile& old_file, const MemberFile& new_file,
                               const Superblock& old_sb, CreatedMemberFile& created, ReplaceResult result) {
  created.keep();
  auto done = commit_replace(old_file, new_file, old_sb, [&](std::string_view step) {
    if (o.after_step) o.after_step(step);
    return Status::ok();
  });
  if (!done) return done.status();
  return result;
}

// replace_member()'s phases, in order. Nothing is written before the copy.

struct ReplaceIdentities {
  std::vector<MemberIdentity> members;
  MemberIdentity old_member;
  MemberIdentity new_member;
};

// Phase 1: the members, OLD among them and NEW not; nothing is opened.
Expected<ReplaceIdentities> identify_replace(const ReplaceOptions& o) {
  if (o.members.empty()) return Status::error(EINVAL, "no members given");
  auto ids = identify_members(o.members, /*allow_missing=*/false);
  if (!ids) return ids.status();
  auto old_id = identify(o.old_member, false);
  if (!old_id) return Status::error(old_id.status().errnum(), "old " + old_id.status().message());
  if (std::none_of(ids->begin(), ids->end(), [&](const MemberIdentity& id) { return same_file(id, *old_id); }))
    return Status::error(EINVAL, "old member " + o.old_member +
                                     ": not among the members given (list every member of the volume, the old "
                                     "one included)");
  auto new_id = identify(o.new_member, /*allow_missing=*/true);
  if (!new_id) return Status::error(new_id.status().errnum(), "new " + new_id.status().message());
  for (const MemberIdentity& id : *ids)
    if (same_file(id, *new_id))
      return refuse_new_member(o.new_member,
                               "same " + std::string(id.is_block_device ? "device" : "file") + " as member " + id.path +
                                   (same_file(id, *old_id) ? " (the old member)" : "") + ", already in the volume");
  return ReplaceIdentities{std::move(*ids), std::move(*old_id), std::move(*new_id)};
}

// Phase 4: NEW written: a superblock it carries cleared first, so that a
// half-made copy never looks like a member; OLD's ranges copied; the end
// of a larger NEW zeroed as mkfs zeroes it (kTailWipe); synced.
Status copy_onto_new(MemberCopy& copier, std::span<const CopyRange> ranges, const MemberFile& new_file,
                     bool has_superblock, uint64_t needed, const CopyProgressFn& progress) {
  if (has_superblock)
    if (Status s = clear_superblocks(new_file); !s) return s;
  if (Status s = copier.copy(ranges, progress); !s) return s;
  if (Status s = wipe_new_member_tail(new_file, needed); !s) return s;
  return sync_member(new_file);
}

}  // namespace

Expected<ReplaceResult> replace_member(const ReplaceOptions& o) {
  auto ids = identify_replace(o);
  if (!ids) return ids.status();
  auto vol = assemble(o.members, MemberFile::Mode::read_write);
  if (!vol) {
    if (auto done = finished_before(o, ids->old_member)) return *done;
    return vol.status();
  }
  if (o.note)
    for (const std::string& w : vol->warnings) o.note(w);
  uint32_t index = 0;
  while (index < vol->members.size() && !is_file(vol->members[index], ids->old_member)) ++index;
  if (index == vol->members.size()) return Status::error(EINVAL, "internal: the old member is not in the volume");
  MemberFile& old_file = vol->members[index];
  const Superblock& old_sb = vol->member_superblocks[index];
  const uint64_t needed = old_sb.member_bytes_needed();

  // Nothing is written to NEW before every check passed; a NEW this run
  // created goes again if the replace fails.
  auto prepared = prepare_new_member(NewMemberRequest{o.new_member, &old_file, &old_sb, nullptr, o.force});
  if (!prepared) return prepared.status();
  MemberFile& new_file = prepared->file;
  CreatedMemberFile& created = prepared->created;
  if (o.prepare_member) {
    if (Status s = o.prepare_member(old_file, index); !s) return s;
    if (Status s = o.prepare_member(new_file, old_sb.member_count()); !s) return s;
  }

  ReplaceResult result;
  result.member_index = index;
  result.member_count = old_sb.member_count();
  result.volume_uuid = old_sb.volume_uuid;
  result.member_uuid = old_sb.member_uuid;
  result.created = created.created();

  // Everything of OLD's but its two superblock blocks: the mount record and
  // the reserved header bytes, then the data area (with the metadata area:
  // a dirty journal is copied as it is and replayed at the next mount).
  std::vector<CopyRange> ranges = {{kMountRecordOffset, kBackupSuperblockOffset},
                                   {kBackupSuperblockOffset + kSuperblockSize, needed}};
  MemberCopy copier(old_file, new_file, o.tuning);
  auto progress = [&](const char* phase) -> CopyProgressFn {
    if (!o.progress) return {};
    return [&o, phase](uint64_t done, uint64_t total) { o.progress(phase, done, total); };
  };
  auto t0 = std::chrono::steady_clock::now();

  // An interrupted replace whose copy still matches OLD byte for byte (it
  // stopped in the switch, and neither was used since) is only finished.
  if (prepared->earlier_copy) {
    if (o.note)
      o.note("new member " + o.new_member + " already carries member index " + std::to_string(index) +
             " of this volume (an earlier replace was interrupted): comparing it with the old member");
    if (Status s = copier.checksum(ranges, progress("check")); !s) return s;
    Status same = copier.verify(progress("compare"));
    if (same) {
      result.verify_seconds = seconds_since(t0);
      result.finished_earlier_copy = true;
      if (o.note) o.note("the copy matches the old member: finishing the replace");
      return commit(o, old_file, new_file, old_sb, created, result);
    }
    if (same.errnum() != EBADMSG) return same;
    if (!o.force) return refuse_diverged(o, index, old_file, new_file, same);
    t0 = std::chrono::steady_clock::now();
  }

  if (Status s = copy_onto_new(copier, ranges, new_file, prepared->has_superblock, needed, progress("copy")); !s)
    return s;
  result.copy_seconds = seconds_since(t0);
  result.data_bytes = copier.data_bytes();
  result.hole_bytes = copier.hole_bytes();
  if (o.after_step) o.after_step("copy");

  t0 = std::chrono::steady_clock::now();
  if (Status s = copier.verify(progress("verify")); !s) return s;
  result.verify_seconds = seconds_since(t0);
  if (o.after_step) o.after_step("verify");

  return commit(o, old_file, new_file, old_sb, created, result);
}

}  // namespace peregrine
