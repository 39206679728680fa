// The state of a restripe (`peregrine grow --add`) read back from the
// superblock copies of all N + k members, to resume it: which phase it
// stopped in and the cursor. Internal to peregrine_volume.
//
// At every instant the copies are in one of three phases (docs/format.md,
// section 5b): preparing (copies for N members without the record and
// copies with it, cursor 0: nothing moved yet), moving (every copy has the
// record; the cursors differ by at most one window, and the smallest is
// safe to resume from), committing (copies for N + k members without the
// record and copies with it whose cursor is at the end).
//
// Thread rules: one thread.
#pragma once

#include <string>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

struct RestripeVolume {
  enum class Phase { preparing, moving, committing };
  Phase phase = Phase::preparing;
  // The shared fields, the N + k member list and the record (cursor
  // included); member_index/member_uuid are member 0's.
  Superblock sb;
  uint64_t generation = 0;          // the highest any copy holds
  std::vector<MemberFile> members;  // [i]: member index i, open and exclusively locked
  std::vector<std::string> warnings;
};

// Opens and locks every path read-write and reads the copies. ENOENT when
// no copy carries a restripe record (nothing to resume); otherwise refuses
// (naming the member) copies of another volume or that no phase explains,
// and a missing or short member.
Expected<RestripeVolume> assemble_restripe(const std::vector<std::string>& paths);

}  // namespace peregrine
