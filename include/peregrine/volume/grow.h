// Growing a volume whose members became larger (a bigger LUN, a longer
// file): raises member_data_size in every superblock, so new stripes are
// appended at the end of the logical space and nothing moves
// (docs/format.md, sections 1 and 6).
//
// grow_volume() assembles the volume read-write (member locks, every
// check of assembly), refuses a volume with a damaged superblock copy,
// computes the new member data size from the members' sizes now with the
// rule mkfs uses, and writes nothing unless that is larger (or a previous
// grow stopped half-way). Writes: the end of each member is zeroed (never
// below the data area in use), then member by member the primary
// superblock, sync, the backup, sync. A crash in between leaves copies
// that disagree only in member_data_size; assembly then uses the smallest,
// so the new space is used only once every copy says so, and running
// grow again finishes. grow_volume() is offline: a mounted volume's members
// are locked by its daemon and refused; the daemon itself uses plan_grow()
// and apply_grow() on the volume it holds.
//
// Thread rules: called from one thread per volume at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "peregrine/util/result.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

struct GrowOptions {
  std::vector<std::string> members;  // every member of the volume, in any order
  std::optional<uint64_t> size;      // first extend regular-file members smaller than this
  // Tests only: called after superblock copy `step` (1..2 x members: member
  // 0's primary, its backup, member 1's primary, ...) is written and synced.
  std::function<void(int step)> after_step;
};

struct GrowResult {
  Superblock before;                  // as assembled: the member data size in use before
  Superblock after;                   // what every copy now says
  std::vector<std::string> members;   // paths in member index order
  std::vector<std::string> warnings;  // from assembly (an interrupted grow, ...)
  bool finished_interrupted = false;  // some copy already recorded a larger size
};

Expected<GrowResult> grow_volume(const GrowOptions& o);

// The two halves of grow_volume, also used by a mounted volume's daemon
// (online grow: it holds the members open and locked, and extends its
// engine and allocator once apply_grow succeeded).
struct GrowPlan {
  uint64_t old_data_size = 0;  // member_data_size in use
  uint64_t new_data_size = 0;
  std::vector<uint64_t> member_sizes;  // bytes, with `size` applied, index order
  uint64_t generation = 0;             // every copy's new generation
};
// What growing `vol` means now, from its members' sizes (`size`: regular
// files smaller than it count as extended to it). Refuses a damaged copy,
// --size on a device, a member smaller than the volume needs, and nothing
// to grow (ENOSPC) unless vol.interrupted_grow is set. Writes nothing.
Expected<GrowPlan> plan_grow(const AssembledVolume& vol, std::optional<uint64_t> size);
// Extends the files to `size`, zeroes the members' new ends and writes
// every superblock copy (see above). On success `vol` describes the grown
// volume (superblock, geometry, member_superblocks; interrupted_grow
// cleared); on failure part-way its copies may disagree, so
// interrupted_grow is set and plan_grow lets the grow run again.
Status apply_grow(AssembledVolume& vol, const GrowPlan& plan, std::optional<uint64_t> size,
                  const std::function<void(int step)>& after_step = {});

}  // namespace peregrine
