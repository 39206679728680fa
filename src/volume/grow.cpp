#include "peregrine/volume/grow.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "member_refusal.h"
#include "member_zero.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/size_text.h"

namespace peregrine {
namespace {

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

}  // namespace

Expected<GrowPlan> plan_grow(const AssembledVolume& vol, std::optional<uint64_t> size) {
  // A damaged copy may hide more damage, and fsck restores it from the
  // good one: grow only over a volume whose every copy is sound.
  if (!vol.damaged_copies.empty())
    return Status::error(
        EUCLEAN, vol.damaged_copies.front().problem + "; run 'peregrine fsck' over the members first, then grow");
  const uint32_t n = vol.superblock.member_count();
  GrowPlan plan;
  for (const MemberFile& m : vol.members) {
    if (size && m.info().is_block_device)
      return refuse_member(m.info().path, "--size applies to regular files, not block devices");
    auto now = size_now(m);
    if (!now) return now.status();
    plan.member_sizes.push_back(size ? std::max(*now, *size) : *now);
  }
  const std::vector<uint64_t>& sizes = plan.member_sizes;
  const uint64_t start = vol.superblock.data_start;
  const uint64_t unit = vol.superblock.stripe_unit;
  plan.old_data_size = vol.superblock.member_data_size;
  for (uint32_t i = 0; i < n; ++i) {
    if (sizes[i] < start + plan.old_data_size)
      return refuse_member(vol.members[i].info().path, "smaller than its recorded size (" + std::to_string(sizes[i]) +
                                                           " bytes, the volume needs " +
                                                           std::to_string(start + plan.old_data_size) + ")");
  }
  // mkfs's rule: the largest multiple of the stripe unit that fits after
  // data_start on the smallest member.
  const size_t smallest = std::min_element(sizes.begin(), sizes.end()) - sizes.begin();
  plan.new_data_size = (sizes[smallest] - start) / unit * unit;
  if (plan.new_data_size == plan.old_data_size && vol.interrupted_grow.empty())
    return Status::error(ENOSPC, "nothing to grow: the members already use all their space (" +
                                     format_size(plan.old_data_size) + " per member; the smallest, " +
                                     vol.members[smallest].info().path + ", holds " + format_size(sizes[smallest]) +
                                     "). Make the members larger first (a larger device, a longer file)");
  for (const Superblock& sb : vol.member_superblocks) plan.generation = std::max(plan.generation, sb.generation);
  ++plan.generation;
  Superblock grown = vol.superblock;
  grown.member_data_size = plan.new_data_size;
  if (Status s = validate_superblock(grown); !s) return Status::error(EINVAL, "internal: " + s.message());
  return plan;
}

Status apply_grow(AssembledVolume& vol, const GrowPlan& plan, std::optional<uint64_t> size,
                  const std::function<void(int step)>& after_step) {
  const uint32_t n = vol.superblock.member_count();
  const uint64_t start = vol.superblock.data_start;
  // Files extended to --size; a failure leaves a longer file and the
  // superblocks as they were.
  for (uint32_t i = 0; i < n; ++i) {
    const MemberFile& m = vol.members[i];
    if (!size || m.info().is_block_device) continue;
    struct stat st {};
    if (::fstat(m.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) >= *size) continue;
    if (::ftruncate(m.fd(), static_cast<off_t>(*size)) != 0)
      return refuse_member(m.info().path, "cannot set size to " + format_size(*size) + ": " + std::strerror(errno));
  }
  // The new end of each member, as mkfs leaves it: no stale signature in
  // its last MiB. Never below the data area in use: that holds files (and
  // a mounted volume's engine reads and writes there meanwhile).
  AlignedBuffer zeros(kZeroChunkBytes);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t end = plan.member_sizes[i] / kBlockSize * kBlockSize;
    const uint64_t tail = std::max(start + plan.old_data_size, end > kTailWipe ? end - kTailWipe : 0);
    if (Status s = zero_member_range(vol.members[i], tail, end, zeros); !s) return s;
    if (Status s = sync_member(vol.members[i]); !s) return s;
  }
  int step = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Superblock own = vol.member_superblocks[i];
    own.member_data_size = plan.new_data_size;
    own.generation = plan.generation;
    for (uint64_t offset : {kPrimarySuperblockOffset, kBackupSuperblockOffset}) {
      if (Status s = write_durable_superblock_copy(vol.members[i], own, offset); !s) {
        if (step > 0)
          vol.interrupted_grow = "a grow from " + format_size(plan.old_data_size) + " to " +
                                 format_size(plan.new_data_size) + " per member stopped part-way: " + s.message();
        return s;
      }
      if (after_step) after_step(++step);
    }
    vol.member_superblocks[i] = own;
  }
  vol.superblock.member_data_size = plan.new_data_size;
  vol.superblock.generation = vol.member_superblocks[0].generation;
  vol.geometry = vol.superblock.geometry();
  vol.interrupted_grow.clear();
  return Status::ok();
}

Expected<GrowResult> grow_volume(const GrowOptions& o) {
  auto assembled = assemble(o.members, MemberFile::Mode::read_write);
  if (!assembled) return assembled.status();
  AssembledVolume& vol = *assembled;
  GrowResult result;
  result.before = vol.superblock;
  result.warnings = vol.warnings;
  result.finished_interrupted = !vol.interrupted_grow.empty();
  for (const MemberFile& m : vol.members) result.members.push_back(m.info().path);
  auto plan = plan_grow(vol, o.size);
  if (!plan) return plan.status();
  if (Status s = apply_grow(vol, *plan, o.size, o.after_step); !s) return s;
  result.after = vol.superblock;
  return result;
}

}  // namespace peregrine
