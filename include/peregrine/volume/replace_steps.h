// The steps of a member replace that the offline command (replace.h) and a
// mounted volume's daemon (online replace, fs/online_replace.h) share:
// preparing NEW (created, opened, locked, checked as mkfs checks a member,
// its contents examined), wiping the end of a larger NEW, and the switch
// (commit_replace: NEW takes OLD's identity, OLD's superblocks and mount
// record go, each step synced, so that the volume assembles with OLD or
// with NEW at every point). Byte layout: docs/format.md, section 9.
//
// Thread rules: plain functions; a NewMember is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

// Removes a NEW that this run created, unless it was kept (committed).
class CreatedMemberFile {
 public:
  CreatedMemberFile() = default;
  CreatedMemberFile(CreatedMemberFile&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  CreatedMemberFile& operator=(CreatedMemberFile&&) = delete;
  ~CreatedMemberFile();
  void set(std::string path) { path_ = std::move(path); }
  void keep() { path_.clear(); }
  bool created() const { return !path_.empty(); }

 private:
  std::string path_;
};

struct NewMember {
  MemberFile file;
  CreatedMemberFile created;
  bool has_superblock = false;  // a peregrine superblock (cleared before the copy)
  bool earlier_copy = false;    // it carries OLD's identity: an interrupted replace's
};

struct NewMemberRequest {
  std::string path;
  const MemberFile* old_file = nullptr;  // the member it replaces
  const Superblock* old_superblock = nullptr;
  const std::vector<MemberFile>* members = nullptr;  // NEW must be none of them (may be null)
  bool force = false;  // overwrite a filesystem, partition table or another volume's member
};

// NEW, created when it is a missing regular file (as large as OLD), then
// opened, locked and checked; an earlier copy of OLD is recognised, another
// volume's member or a filesystem refused unless `force`. Nothing is
// written to an existing NEW. Errors start "new member PATH: ".
Expected<NewMember> prepare_new_member(const NewMemberRequest& request);

// Both superblock copies zeroed and synced: a half-made copy never looks
// like a member.
Status clear_superblocks(const MemberFile& m);
// The mount record zeroed and synced.
Status clear_mount_record(const MemberFile& m);

// The end of a NEW larger than `needed` zeroed as mkfs zeroes it. Not synced.
Status wipe_new_member_tail(const MemberFile& new_file, uint64_t needed);

// The switch, NEW already a synced copy of OLD: NEW's primary superblock
// (OLD's, one generation on), sync, its backup, sync, OLD's primary
// zeroed, sync, its backup, sync, then OLD's mount record, sync.
// `after_step` (may be empty) is told "new-primary", "new-backup",
// "old-primary", "old-backup" once each is on disk; an error it returns
// ends the switch there as a failed write would (tests stop or fail the
// switch at a step this way). Returns NEW's superblock.
Expected<Superblock> commit_replace(const MemberFile& old_file, const MemberFile& new_file, const Superblock& old_sb,
                                    const std::function<Status(std::string_view)>& after_step);

}  // namespace peregrine
