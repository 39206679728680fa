#include "peregrine/volume/assembly.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>

#include "member_identity.h"
#include "member_refusal.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"
#include "peregrine/volume/size_text.h"

namespace peregrine {
namespace {

struct Found {
  std::string path;
  MemberFile file;
  Superblock sb;
  std::vector<std::pair<uint64_t, std::string>> damaged;  // (offset, warning) of an unused copy
  // The backup's member_data_size when it differs from the used copy's in
  // that (and the generation) only: a grow interrupted between the two.
  std::optional<uint64_t> lagging_backup_data_size;
};

template <typename T>
std::string text(const T& v) {
  if constexpr (std::is_same_v<T, Uuid>)
    return v.to_string();
  else if constexpr (std::is_same_v<T, std::string>)
    return "'" + v + "'";
  else
    return std::to_string(v);
}

// The first field, other than the member's own index/UUID and the rewrite
// generation, in which two members of one volume disagree; empty if none.
// Generation is left out: rewriting N superblocks is not atomic, and any
// complete generation describes the same geometry. member_data_size is left
// out with `growing`: peregrine grow rewrites it member by member, and the
// volume then uses the smallest (docs/format.md, section 6).
std::string first_difference(const Superblock& a, const Superblock& b, bool growing = false) {
#define PEREGRINE_CMP(field) \
  if (a.field != b.field) return std::string(#field) + " " + text(a.field) + " vs " + text(b.field)
  PEREGRINE_CMP(format_version);
  PEREGRINE_CMP(layout_version);
  PEREGRINE_CMP(features_compat);
  PEREGRINE_CMP(features_ro_compat);
  PEREGRINE_CMP(features_incompat);
  PEREGRINE_CMP(member_count());
  PEREGRINE_CMP(block_size);
  PEREGRINE_CMP(stripe_unit);
  PEREGRINE_CMP(data_start);
  if (!growing) PEREGRINE_CMP(member_data_size);
  PEREGRINE_CMP(meta_offset);
  PEREGRINE_CMP(meta_size);
  PEREGRINE_CMP(creation_time);
  PEREGRINE_CMP(label);
#undef PEREGRINE_CMP
  for (uint32_t i = 0; i < a.member_count(); ++i)
    if (a.member_uuids[i] != b.member_uuids[i])
      return "member list entry " + std::to_string(i) + " " + a.member_uuids[i].to_string() + " vs " +
             b.member_uuids[i].to_string();
  return {};
}

// Picks the superblock copy to trust on one member; the other copy, when
// it is corrupt or differs, goes to `damaged` as (offset, warning).
// A backup that differs from its primary only in member_data_size (and so
// the generation) is not damage but a grow that stopped between the two
// copies: `lagging` gets its size, and the volume will use the smaller.
Expected<Superblock> choose_copy(const std::string& path, MemberSuperblocks& sbs,
                                 std::vector<std::pair<uint64_t, std::string>>& damaged,
                                 std::optional<uint64_t>& lagging) {
  if (sbs.primary.superblock) {
    const Superblock& p = *sbs.primary.superblock;
    if (!sbs.backup.superblock) {
      damaged.emplace_back(kBackupSuperblockOffset, "member " + path + ": backup superblock corrupt (" +
                                                        sbs.backup.problem + "), primary is intact");
    } else {
      const Superblock& b = *sbs.backup.superblock;
      const bool same_member =
          b.volume_uuid == p.volume_uuid && b.member_uuid == p.member_uuid && b.member_index == p.member_index;
      if (same_member && b.member_data_size != p.member_data_size && first_difference(p, b, true).empty())
        lagging = b.member_data_size;
      else if (!same_member || !first_difference(p, b).empty() || b.generation != p.generation)
        damaged.emplace_back(kBackupSuperblockOffset, "member " + path + ": backup superblock (generation " +
                                                          std::to_string(b.generation) +
                                                          ") differs from the primary (generation " +
                                                          std::to_string(p.generation) + "), using the primary");
    }
    return std::move(*sbs.primary.superblock);
  }
  if (sbs.backup.superblock) {
    damaged.emplace_back(kPrimarySuperblockOffset,
                         "member " + path + ": primary superblock corrupt (" + sbs.primary.problem + "), using backup");
    return std::move(*sbs.backup.superblock);
  }
  if (!sbs.any_magic()) return refuse_member(path, "not a peregrine member (no superblock found)");
  return refuse_member(path, "superblock corrupt and no valid backup (primary: " + sbs.primary.problem +
                                 "; backup: " + sbs.backup.problem + ")");
}

// A copy that says `peregrine grow --add` is moving the data area: only
// the restripe may use the volume (src/volume/restripe_assembly.cpp).
Status refuse_restripe(const Superblock& sb) {
  return Status::error(
      EINPROGRESS, "volume " + sb.volume_uuid.to_string() + ": interrupted restripe ('peregrine grow --add') from " +
                       std::to_string(sb.restripe_old_count) + " onto " + std::to_string(sb.member_count()) +
                       " members: run 'peregrine grow --add NEW... MEMBER...' again with the "
                       "same members to finish it; until then the volume cannot be used");
}

// assemble()'s phases, in order.

// Each member opened (and locked) with the superblock copy it is to use.
Expected<std::vector<Found>> read_members(const std::vector<std::string>& paths, MemberFile::Mode mode,
                                          AssembledVolume& vol) {
  std::vector<Found> found;
  found.reserve(paths.size());
  for (const std::string& path : paths) {
    auto file = open_member_locked(path, mode);
    if (!file) return file.status();
    auto sbs = read_member_superblocks(*file);
    if (!sbs) return sbs.status();
    for (const SuperblockCopy* c : {&sbs->primary, &sbs->backup})
      if (c->superblock && c->superblock->restriping()) return refuse_restripe(*c->superblock);
    std::vector<std::pair<uint64_t, std::string>> damaged;
    std::optional<uint64_t> lagging;
    auto sb = choose_copy(path, *sbs, damaged, lagging);
    if (!sb) return sb.status();
    for (const auto& d : damaged) vol.warnings.push_back(d.second);
    found.push_back(Found{path, std::move(*file), std::move(*sb), std::move(damaged), lagging});
  }
  return found;
}

// The member whose superblock speaks for the volume: the volume is the
// UUID most members carry (the first member's on a tie); every other
// member is foreign, and every member must share its geometry.
Expected<const Found*> agree_on_volume(const std::vector<Found>& found) {
  std::map<Uuid, size_t> votes;
  for (const Found& f : found) ++votes[f.sb.volume_uuid];
  const Found* ref = &found[0];
  for (const Found& f : found)
    if (votes[f.sb.volume_uuid] > votes[ref->sb.volume_uuid]) ref = &f;
  const Uuid volume = ref->sb.volume_uuid;
  for (const Found& f : found) {
    if (f.sb.volume_uuid != volume)
      return refuse_member(f.path, "belongs to another volume (volume UUID " + f.sb.volume_uuid.to_string() +
                                       ", member UUID " + f.sb.member_uuid.to_string() +
                                       "), not to the volume of the other members (volume UUID " + volume.to_string() +
                                       ")");
  }
  for (const Found& f : found) {
    if (std::string diff = first_difference(ref->sb, f.sb, /*growing=*/true); !diff.empty())
      return refuse_member(f.path, "geometry differs from member " + ref->path + " (" + diff + ")");
  }
  return ref;
}

// The data size per member. Where the copies disagree on member_data_size,
// a grow was interrupted: the volume uses the smallest, so nothing is ever
// placed where a copy does not yet say the data area reaches.
uint64_t settle_data_size(const std::vector<Found>& found, AssembledVolume& vol) {
  uint64_t data_size = UINT64_MAX;
  for (const Found& f : found) {
    data_size = std::min(data_size, f.sb.member_data_size);
    if (f.lagging_backup_data_size) data_size = std::min(data_size, *f.lagging_backup_data_size);
  }
  bool differs = false;
  std::string sizes;
  for (const Found& f : found) {
    if (f.sb.member_data_size != data_size || f.lagging_backup_data_size) differs = true;
    sizes += (sizes.empty() ? "" : ", ") + f.path + " " + format_size(f.sb.member_data_size);
    if (f.lagging_backup_data_size) sizes += " (backup " + format_size(*f.lagging_backup_data_size) + ")";
  }
  if (differs) {
    vol.interrupted_grow = "an interrupted 'peregrine grow': the superblocks record different member data sizes (" +
                           sizes + "); the volume uses the smallest, " + format_size(data_size) +
                           " per member, until 'peregrine grow' is run again over all members to finish";
    vol.warnings.push_back(vol.interrupted_grow);
  }
  return data_size;
}

// Each member in its slot (its index in the volume): none twice, none
// missing.
Expected<std::vector<Found*>> place_members(std::vector<Found>& found, const Superblock& shared) {
  const uint32_t n = shared.member_count();
  std::vector<Found*> slot(n, nullptr);
  for (Found& f : found) {
    Found*& s = slot[f.sb.member_index];
    if (s != nullptr) {
      // Two copies of one member: what an interrupted `peregrine replace`
      // leaves (the old member and its copy, one generation on).
      std::string copy;
      if (s->sb.member_uuid == f.sb.member_uuid)
        copy = "; both are the same member (generation " + std::to_string(s->sb.generation) + " and " +
               std::to_string(f.sb.generation) +
               "), one a copy of the other, as an interrupted 'peregrine replace' leaves them: give only one "
               "(run that replace again to finish it)";
      return refuse_member(f.path, "duplicated member: claims index " + std::to_string(f.sb.member_index) +
                                       " (member UUID " + f.sb.member_uuid.to_string() + "), as does member " +
                                       s->path + copy);
    }
    s = &f;
  }
  std::string missing;
  for (uint32_t i = 0; i < n; ++i) {
    if (slot[i] == nullptr)
      missing += (missing.empty() ? "" : ", ") + std::string("index ") + std::to_string(i) + " (member UUID " +
                 shared.member_uuids[i].to_string() + ")";
  }
  if (!missing.empty())
    return Status::error(ENODEV, "volume " + shared.volume_uuid.to_string() + ": " +
                                     std::to_string(n - found.size()) + " of " + std::to_string(n) +
                                     " members missing: " + missing);
  return slot;
}

// Every member large enough for the volume (a short one only read-only,
// with a warning) and with blocks no larger than the volume's.
Status check_member_devices(const std::vector<Found>& found, const Superblock& shared, bool allow_short,
                            AssembledVolume& vol) {
  for (const Found& f : found) {
    uint64_t have = f.file.info().size_bytes;
    if (have < shared.member_bytes_needed() && allow_short) {
      vol.short_members.push_back({f.sb.member_index, have});
      vol.warnings.push_back("member " + f.path + ": smaller than its recorded size (" + std::to_string(have) +
                             " bytes, the volume needs " + std::to_string(shared.member_bytes_needed()) + ")");
    } else if (have < shared.member_bytes_needed())
      return refuse_member(f.path, "smaller than its recorded size (" + std::to_string(have) +
                                       " bytes, the volume needs " + std::to_string(shared.member_bytes_needed()) +
                                       ")");
    if (f.file.info().logical_block_size > shared.block_size)
      return refuse_member(f.path, "logical block size " + std::to_string(f.file.info().logical_block_size) +
                                       " is larger than the volume block size " + std::to_string(shared.block_size));
  }
  return Status::ok();
}

}  // namespace

Expected<AssembledVolume> assemble(const std::vector<std::string>& paths, MemberFile::Mode mode, bool allow_short) {
  allow_short = allow_short && mode == MemberFile::Mode::read_only;
  if (paths.empty()) return Status::error(EINVAL, "no members given");
  auto ids = identify_members(paths, /*allow_missing=*/false);
  if (!ids) return ids.status();

  AssembledVolume vol;
  auto found = read_members(paths, mode, vol);
  if (!found) return found.status();
  auto ref = agree_on_volume(*found);
  if (!ref) return ref.status();
  Superblock shared = (*ref)->sb;
  shared.member_data_size = settle_data_size(*found, vol);
  auto slot = place_members(*found, shared);
  if (!slot) return slot.status();
  if (Status s = check_member_devices(*found, shared, allow_short, vol); !s) return s;
  if (mode == MemberFile::Mode::read_write) {
    if (uint64_t unknown = shared.features_ro_compat & ~kKnownRoCompatFeatures; unknown != 0)
      return Status::error(EROFS, "volume " + shared.volume_uuid.to_string() + ": read-only-compatible features " +
                                      hex_number(unknown) + " unknown to this build; assemble read-only");
  }

  vol.superblock = (*slot)[0]->sb;
  vol.superblock.member_data_size = shared.member_data_size;
  vol.geometry = vol.superblock.geometry();
  for (uint32_t i = 0; i < shared.member_count(); ++i) {
    Found* f = (*slot)[i];
    for (auto& [offset, problem] : f->damaged) vol.damaged_copies.push_back({i, offset, std::move(problem)});
    vol.member_superblocks.push_back(f->sb);
    vol.members.push_back(std::move(f->file));
  }
  return vol;
}

}  // namespace peregrine
