// The shared steps of a member replace (replace_steps.h).
#include "peregrine/volume/replace_steps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "member_identity.h"
#include "member_refusal.h"
#include "member_zero.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/mount_record.h"
#include "peregrine/volume/size_text.h"
#include "signature_probe.h"

namespace peregrine {
namespace {

bool is_existing_file(const MemberFile& m, const MemberIdentity& id) {
  if (!id.exists || m.info().is_block_device != id.is_block_device) return false;
  return id.is_block_device ? m.info().dev == id.dev : (m.info().dev == id.dev && m.info().ino == id.ino);
}

Status write_zeros(const MemberFile& m, uint64_t offset, uint64_t len) {
  AlignedBuffer zeros(len);
  if (int rc = m.pwrite_full(zeros.data(), len, offset); rc < 0)
    return Status::error(-rc, "member " + m.info().path + ": cannot write at offset " + std::to_string(offset) + ": " +
                                  std::strerror(-rc));
  return Status::ok();
}

// NEW carries OLD's own identity: left by an interrupted replace.
bool is_earlier_copy(const MemberSuperblocks& sbs, const Superblock& old_sb) {
  const SuperblockCopy& copy = sbs.primary.superblock ? sbs.primary : sbs.backup;
  return copy.superblock && copy.superblock->volume_uuid == old_sb.volume_uuid &&
         copy.superblock->member_uuid == old_sb.member_uuid;
}

// NEW holds a peregrine superblock other than OLD's identity.
Status check_foreign_superblock(const NewMemberRequest& r, const MemberSuperblocks& sbs) {
  const SuperblockCopy& copy = sbs.primary.superblock ? sbs.primary : sbs.backup;
  if (r.force) return Status::ok();
  if (copy.superblock) {
    const Superblock& sb = *copy.superblock;
    return refuse_new_member(r.path, "already member " + std::to_string(sb.member_index) + " of " +
                                         std::to_string(sb.member_count()) + " of peregrine volume " +
                                         sb.volume_uuid.to_string() + " (use --force to overwrite)");
  }
  return refuse_new_member(r.path, "holds a damaged peregrine superblock (use --force to overwrite)");
}

// Created when it is a missing regular file (as large as OLD), then
// opened, locked and checked as mkfs checks a member.
Expected<MemberFile> open_new_member(const NewMemberRequest& r, const MemberIdentity& new_id, uint64_t needed,
                                     CreatedMemberFile& created) {
  if (!new_id.exists) {
    std::filesystem::path dir = std::filesystem::path(new_id.absolute).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      return refuse_new_member(r.path, "does not exist, and " + dir.string() + " is not a directory to create it in");
    int fd = ::open(r.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return refuse_new_member(r.path, std::string("cannot create: ") + std::strerror(errno));
    created.set(r.path);
    const uint64_t size = std::max(needed, r.old_file->info().size_bytes);
    int rc = ::ftruncate(fd, static_cast<off_t>(size));
    int e = errno;
    ::close(fd);
    if (rc != 0) return refuse_new_member(r.path, "cannot set size to " + format_size(size) + ": " + std::strerror(e));
  }
  auto opened = open_member_locked(r.path, MemberFile::Mode::read_write);
  if (!opened) return Status::error(opened.status().errnum(), "new " + opened.status().message());
  if (opened->info().logical_block_size > kBlockSize)
    return refuse_new_member(r.path, "logical block size " + std::to_string(opened->info().logical_block_size) +
                                         " is larger than the volume block size " + std::to_string(kBlockSize));
  if (opened->info().size_bytes < needed)
    return refuse_new_member(r.path, "too small (" + std::to_string(opened->info().size_bytes) + " bytes); member " +
                                         r.old_file->info().path + " holds " + std::to_string(needed) +
                                         " bytes of the volume (" + format_size(needed) + ")");
  return opened;
}

}  // namespace

CreatedMemberFile::~CreatedMemberFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

Expected<NewMember> prepare_new_member(const NewMemberRequest& r) {
  auto ids = identify_members({r.path}, /*allow_missing=*/true);
  if (!ids) return Status::error(ids.status().errnum(), "new " + ids.status().message());
  const MemberIdentity& new_id = ids->front();
  if (r.members != nullptr)
    for (const MemberFile& m : *r.members)
      if (is_existing_file(m, new_id))
        return refuse_new_member(r.path, "same " + std::string(new_id.is_block_device ? "device" : "file") +
                                             " as member " + m.info().path +
                                             (&m == r.old_file ? " (the old member)" : "") + ", already in the volume");
  CreatedMemberFile created;
  auto opened = open_new_member(r, new_id, r.old_superblock->member_bytes_needed(), created);
  if (!opened) return opened.status();
  NewMember n{std::move(*opened), std::move(created)};
  auto sbs = read_member_superblocks(n.file);
  if (!sbs) return sbs.status();
  n.has_superblock = sbs->any_magic();
  n.earlier_copy = is_earlier_copy(*sbs, *r.old_superblock);
  if (n.has_superblock && !n.earlier_copy) {
    if (Status s = check_foreign_superblock(r, *sbs); !s) return s;
  } else if (!n.has_superblock && !r.force && !n.created.created()) {
    auto found = probe_foreign_signature(r.path);
    if (!found) return found.status();
    if (*found) return refuse_new_member(r.path, "holds " + **found + " (use --force to overwrite)");
  }
  return n;
}

Status clear_mount_record(const MemberFile& m) {
  if (Status s = write_zeros(m, kMountRecordOffset, kMountRecordMaxBytes); !s) return s;
  return sync_member(m);
}

Status clear_superblocks(const MemberFile& m) {
  if (Status s = write_zeros(m, kPrimarySuperblockOffset, kSuperblockSize); !s) return s;
  if (Status s = write_zeros(m, kBackupSuperblockOffset, kSuperblockSize); !s) return s;
  return sync_member(m);
}

Status wipe_new_member_tail(const MemberFile& new_file, uint64_t needed) {
  const uint64_t new_size = new_file.info().size_bytes / kBlockSize * kBlockSize;
  if (new_size <= needed) return Status::ok();
  AlignedBuffer zeros(1 << 20);
  return zero_member_range(new_file, std::max(needed, new_size - std::min(new_size, kTailWipe)), new_size, zeros);
}

// NEW takes OLD's identity, one generation on; from the first sync on,
// the volume assembles with either (never with both: they claim the same
// index), and once OLD's copies are gone only with NEW.
Expected<Superblock> commit_replace(const MemberFile& old_file, const MemberFile& new_file, const Superblock& old_sb,
                                    const std::function<Status(std::string_view)>& after_step) {
  Superblock new_sb = old_sb;
  new_sb.generation += 1;
  auto step = [&](const MemberFile& m, const char* name, auto&& write) -> Status {
    if (Status s = write(); !s) return s;
    if (Status s = sync_member(m); !s) return s;
    return after_step ? after_step(name) : Status::ok();
  };
  if (Status s = step(new_file, "new-primary",
                      [&] { return write_superblock_copy(new_file, new_sb, kPrimarySuperblockOffset); });
      !s)
    return s;
  if (Status s = step(new_file, "new-backup",
                      [&] { return write_superblock_copy(new_file, new_sb, kBackupSuperblockOffset); });
      !s)
    return s;
  if (Status s = step(old_file, "old-primary",
                      [&] { return write_zeros(old_file, kPrimarySuperblockOffset, kSuperblockSize); });
      !s)
    return s;
  if (Status s = step(old_file, "old-backup",
                      [&] { return write_zeros(old_file, kBackupSuperblockOffset, kSuperblockSize); });
      !s)
    return s;
  // The mount record goes too (examine and scan must not call OLD a member
  // of the volume from its record), but only once OLD's last superblock
  // copy is gone for good: cleared in one go with it, a power cut could
  // keep the record's clearing and lose the copy's, and OLD, still a
  // member, would no longer match the copy NEW holds. A run stopped in
  // between leaves the record to the rerun (replace.cpp, finished_before).
  if (Status s = clear_mount_record(old_file); !s) return s;
  return new_sb;
}

}  // namespace peregrine
