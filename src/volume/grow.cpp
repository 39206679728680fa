#include "peregrine/volume/grow.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "member_zero.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/size_text.h"

namespace peregrine {
namespace {

constexpr uint64_t kZeroChunk = 1024 * 1024;

Status refuse(const std::string& path, const std::string& why) {
  return Status::error(EINVAL, "member " + path + ": " + why);
}

// The member's size now: MemberInfo holds it as it was at open, and a
// device may have been resized since (or --size extended the file).
Expected<uint64_t> size_now(const MemberFile& m) {
  if (m.info().is_block_device) {
    uint64_t bytes = 0;
    if (::ioctl(m.fd(), BLKGETSIZE64, &bytes) != 0)
      return Status::error(errno, "member " + m.info().path + ": cannot read the device size: " + std::strerror(errno));
    return bytes;
  }
  struct stat st {};
  if (::fstat(m.fd(), &st) != 0)
    return Status::error(errno, "member " + m.info().path + ": cannot stat: " + std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

Status sync_member(const MemberFile& m) {
  if (int rc = m.sync(); rc < 0)
    return Status::error(-rc, "member " + m.info().path + ": cannot sync: " + std::strerror(-rc));
  return Status::ok();
}

// Writes one copy, syncs, and reads it back: the next step relies on it.
Status write_copy(const MemberFile& m, const Superblock& sb, uint64_t offset) {
  if (Status s = write_superblock_copy(m, sb, offset); !s) return s;
  if (Status s = sync_member(m); !s) return s;
  auto back = read_member_superblocks(m);
  if (!back) return back.status();
  const SuperblockCopy& copy = offset == kPrimarySuperblockOffset ? back->primary : back->backup;
  if (!copy.superblock || *copy.superblock != sb)
    return Status::error(EIO, "member " + m.info().path + ": the superblock at offset " + std::to_string(offset) +
                                  " reads back different from what was written");
  return Status::ok();
}

}  // namespace

Expected<GrowResult> grow_volume(const GrowOptions& o) {
  auto assembled = assemble(o.members, MemberFile::Mode::read_write);
  if (!assembled) return assembled.status();
  AssembledVolume& vol = *assembled;
  const uint32_t n = vol.superblock.member_count();
  // A damaged copy may hide more damage, and fsck restores it from the
  // good one: grow only over a volume whose every copy is sound.
  if (!vol.damaged_copies.empty())
    return Status::error(EUCLEAN, vol.damaged_copies.front().problem +
                                      "; run 'peregrine fsck' over the members first, then grow");

  GrowResult result;
  result.before = vol.superblock;
  result.warnings = vol.warnings;
  result.finished_interrupted = !vol.interrupted_grow.empty();
  for (const MemberFile& m : vol.members) result.members.push_back(m.info().path);

  // The members' sizes, with --size applied in the plan (written below,
  // once everything is known to be fine).
  std::vector<uint64_t> sizes;
  for (const MemberFile& m : vol.members) {
    if (o.size && m.info().is_block_device)
      return refuse(m.info().path, "--size applies to regular files, not block devices");
    auto now = size_now(m);
    if (!now) return now.status();
    sizes.push_back(o.size ? std::max(*now, *o.size) : *now);
  }
  const uint64_t start = vol.superblock.data_start;
  const uint64_t unit = vol.superblock.stripe_unit;
  const uint64_t in_use = vol.superblock.member_data_size;
  const size_t smallest = std::min_element(sizes.begin(), sizes.end()) - sizes.begin();
  for (uint32_t i = 0; i < n; ++i) {
    if (sizes[i] < start + in_use)
      return refuse(result.members[i], "smaller than its recorded size (" + std::to_string(sizes[i]) +
                                           " bytes, the volume needs " + std::to_string(start + in_use) + ")");
  }
  // mkfs's rule: the largest multiple of the stripe unit that fits after
  // data_start on the smallest member.
  const uint64_t grown = (sizes[smallest] - start) / unit * unit;
  if (grown == in_use && vol.interrupted_grow.empty())
    return Status::error(ENOSPC, "nothing to grow: the members already use all their space (" +
                                     format_size(in_use) + " per member; the smallest, " + result.members[smallest] +
                                     ", holds " + format_size(sizes[smallest]) +
                                     "). Make the members larger first (a larger device, or --size for " +
                                     "files)");
  Superblock shared = vol.superblock;
  shared.member_data_size = grown;
  uint64_t generation = 0;
  for (const Superblock& sb : vol.member_superblocks) generation = std::max(generation, sb.generation);
  shared.generation = generation + 1;
  if (Status s = validate_superblock(shared); !s) return Status::error(EINVAL, "internal: " + s.message());

  // Files extended to --size; a failure leaves a longer file and the
  // superblocks as they were.
  for (uint32_t i = 0; i < n; ++i) {
    const MemberFile& m = vol.members[i];
    if (!o.size || m.info().is_block_device) continue;
    struct stat st {};
    if (::fstat(m.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) >= *o.size) continue;
    if (::ftruncate(m.fd(), static_cast<off_t>(*o.size)) != 0)
      return refuse(m.info().path, "cannot set size to " + format_size(*o.size) + ": " + std::strerror(errno));
  }
  // The new end of each member, as mkfs leaves it: no stale signature in
  // its last MiB. Never below the data area in use: that holds files.
  AlignedBuffer zeros(kZeroChunk);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t end = sizes[i] / kBlockSize * kBlockSize;
    const uint64_t tail = std::max(start + in_use, end > kTailWipe ? end - kTailWipe : 0);
    if (Status s = zero_member_range(vol.members[i], tail, end, zeros); !s) return s;
    if (Status s = sync_member(vol.members[i]); !s) return s;
  }
  int step = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Superblock own = vol.member_superblocks[i];
    own.member_data_size = shared.member_data_size;
    own.generation = shared.generation;
    for (uint64_t offset : {kPrimarySuperblockOffset, kBackupSuperblockOffset}) {
      if (Status s = write_copy(vol.members[i], own, offset); !s) return s;
      if (o.after_step) o.after_step(++step);
    }
  }
  result.after = shared;
  result.after.member_index = vol.superblock.member_index;
  result.after.member_uuid = vol.superblock.member_uuid;
  return result;
}

}  // namespace peregrine
