#include "restripe_state.h"

#include <algorithm>
#include <cerrno>
#include <optional>

#include "member_identity.h"
#include "member_refusal.h"
#include "peregrine/volume/member_lock.h"
#include "peregrine/volume/member_superblocks.h"

namespace peregrine {
namespace {

// Fields every copy of the volume shares in every phase.
bool same_volume_fields(const Superblock& a, const Superblock& b) {
  return a.format_version == b.format_version && a.layout_version == b.layout_version &&
         a.features_compat == b.features_compat && a.features_ro_compat == b.features_ro_compat &&
         a.volume_uuid == b.volume_uuid && a.block_size == b.block_size && a.stripe_unit == b.stripe_unit &&
         a.data_start == b.data_start && a.member_data_size == b.member_data_size && a.meta_offset == b.meta_offset &&
         a.meta_size == b.meta_size && a.creation_time == b.creation_time && a.label == b.label;
}

bool is_prefix(const std::vector<Uuid>& p, const std::vector<Uuid>& full) {
  return p.size() <= full.size() && std::equal(p.begin(), p.end(), full.begin());
}

// assemble_restripe()'s phases, in order.

struct FoundCopy {
  std::string path;
  MemberFile file;
  std::vector<Superblock> copies;  // those that decode
  std::vector<std::string> problems;
};

// Each member opened (and locked) with the superblock copies that decode.
Expected<std::vector<FoundCopy>> read_copies(const std::vector<std::string>& paths) {
  std::vector<FoundCopy> found;
  for (const std::string& path : paths) {
    auto file = open_member_locked(path, MemberFile::Mode::read_write);
    if (!file) return file.status();
    auto sbs = read_member_superblocks(*file);
    if (!sbs) return sbs.status();
    FoundCopy f{path, std::move(*file), {}, {}};
    for (SuperblockCopy* c : {&sbs->primary, &sbs->backup}) {
      if (c->superblock)
        f.copies.push_back(std::move(*c->superblock));
      else if (c->has_magic)
        f.problems.push_back(c->problem);
    }
    if (f.copies.empty())
      return refuse_member(path, sbs->any_magic()
                                     ? "superblock corrupt and no valid backup (" + f.problems.front() + ")"
                                     : "not a peregrine member (no superblock found)");
    found.push_back(std::move(f));
  }
  return found;
}

// The restripe record of the newest generation: what every copy is
// checked against.
const Superblock* newest_restripe_record(const std::vector<FoundCopy>& found) {
  const Superblock* tmpl = nullptr;
  for (const FoundCopy& f : found)
    for (const Superblock& c : f.copies)
      if (c.restriping() && (tmpl == nullptr || c.generation > tmpl->generation)) tmpl = &c;
  return tmpl;
}

// What the copies say together: which phase's copies are present, and
// the lowest cursor among those mid-restripe.
struct CopiesSeen {
  bool old_plain = false;  // a copy of the old member list, before the restripe
  bool new_plain = false;  // a copy of the new member list, after it
  std::optional<uint64_t> cursor;
};

// Every copy of f checked against the record t: the same volume, a member
// list of the old, the new or the restripe's, one member index. Returns
// the index.
Expected<uint32_t> check_member_copies(const FoundCopy& f, const Superblock& t, CopiesSeen& seen,
                                       uint64_t& generation) {
  const uint32_t n_old = t.restripe_old_count;
  std::optional<uint32_t> index;
  for (const Superblock& c : f.copies) {
    generation = std::max(generation, c.generation);
    if (!same_volume_fields(c, t))
      return refuse_member(f.path, c.volume_uuid == t.volume_uuid
                                       ? "superblock copy (generation " + std::to_string(c.generation) +
                                             ") does not match the restripe the other copies record"
                                       : "belongs to another volume (" + c.volume_uuid.to_string() +
                                             ") than the restripe of volume " + t.volume_uuid.to_string());
    if (c.restriping()) {
      if (c.member_uuids != t.member_uuids || c.restripe_old_count != n_old ||
          (c.features_incompat & ~kIncompatRestripe) != (t.features_incompat & ~kIncompatRestripe))
        return refuse_member(f.path, "its restripe record differs from the other members'");
      seen.cursor = std::min(seen.cursor.value_or(UINT64_MAX), c.restripe_cursor);
    } else if (c.member_count() == n_old && is_prefix(c.member_uuids, t.member_uuids)) {
      seen.old_plain = true;
    } else if (c.member_uuids == t.member_uuids) {
      seen.new_plain = true;
    } else {
      return refuse_member(f.path, "its member list fits neither the old nor the new member list of the restripe");
    }
    if (index && *index != c.member_index)
      return refuse_member(f.path, "its two superblock copies name different members");
    index = c.member_index;
    if (c.member_uuid != t.member_uuids[c.member_index])
      return refuse_member(f.path, "not the member the restripe lists at index " + std::to_string(c.member_index));
  }
  return *index;
}

}  // namespace

Expected<RestripeVolume> assemble_restripe(const std::vector<std::string>& paths) {
  auto ids = identify_members(paths, /*allow_missing=*/false);
  if (!ids) return ids.status();
  auto found = read_copies(paths);
  if (!found) return found.status();
  const Superblock* tmpl = newest_restripe_record(*found);
  if (tmpl == nullptr) return Status::error(ENOENT, "no restripe to resume");

  RestripeVolume vol;
  vol.sb = *tmpl;
  const Superblock& t = vol.sb;
  const uint32_t n_new = t.member_count(), n_old = t.restripe_old_count;
  const uint64_t end = t.member_data_size / t.stripe_unit * n_old;
  CopiesSeen seen;
  std::vector<FoundCopy*> slot(n_new, nullptr);
  for (FoundCopy& f : *found) {
    auto index = check_member_copies(f, t, seen, vol.generation);
    if (!index) return index.status();
    for (const std::string& p : f.problems)
      vol.warnings.push_back("member " + f.path + ": a superblock copy is corrupt (" + p + "); it is rewritten");
    FoundCopy*& s = slot[*index];
    if (s != nullptr)
      return refuse_member(f.path,
                           "duplicated member: claims index " + std::to_string(*index) + ", as does member " + s->path);
    s = &f;
  }
  std::string missing;
  for (uint32_t i = 0; i < n_new; ++i)
    if (slot[i] == nullptr)
      missing += (missing.empty() ? "" : ", ") + std::string("index ") + std::to_string(i) + " (member UUID " +
                 t.member_uuids[i].to_string() + (i >= n_old ? ", added" : "") + ")";
  if (!missing.empty())
    return Status::error(ENODEV, "volume " + t.volume_uuid.to_string() + ": the interrupted restripe onto " +
                                     std::to_string(n_new) + " members needs every one of them; missing: " + missing);

  // The phase the copies agree on, and where the move stopped.
  if (seen.old_plain && seen.new_plain)
    return Status::error(EINVAL, "volume " + t.volume_uuid.to_string() +
                                     ": superblock copies for the old and the new member count at once; "
                                     "no interrupted restripe leaves that");
  const uint64_t c = seen.cursor.value_or(end);
  if ((seen.old_plain && c != 0) || (seen.new_plain && c != end))
    return Status::error(EINVAL, "volume " + t.volume_uuid.to_string() +
                                     ": the restripe cursor does not fit the other superblock copies");
  vol.phase = seen.old_plain   ? RestripeVolume::Phase::preparing
              : seen.new_plain ? RestripeVolume::Phase::committing
                               : RestripeVolume::Phase::moving;
  vol.sb.restripe_cursor = c;
  for (uint32_t i = 0; i < n_new; ++i) {
    FoundCopy& f = *slot[i];
    if (f.file.info().size_bytes < t.member_bytes_needed())
      return refuse_member(f.path, "smaller than its recorded size (" + std::to_string(f.file.info().size_bytes) +
                                       " bytes, the volume needs " + std::to_string(t.member_bytes_needed()) + ")");
    if (f.file.info().logical_block_size > t.block_size)
      return refuse_member(f.path, "logical block size " + std::to_string(f.file.info().logical_block_size) +
                                       " is larger than the volume block size " + std::to_string(t.block_size));
    vol.members.push_back(std::move(f.file));
  }
  return vol;
}

}  // namespace peregrine
