// Assembly: turning a set of member paths (in any order) into one verified
// volume, or refusing with a message that names the member and the problem.
//
// assemble() never writes. It opens every member in the requested mode,
// locks it (exclusive for read_write, shared for read_only; see
// member_lock.h), reads both superblock copies, and checks that the members
// form exactly one complete volume: same volume UUID, every index present
// once, identical geometry, supported versions and features, each member
// large enough. A torn or corrupt primary superblock falls back to the
// backup and adds a warning.
//
// Thread rules: call from one thread; the result is then owned by its
// caller and the locks last as long as its MemberFiles.
#pragma once

#include <string>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/geometry.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

// A superblock copy that assembly did not use because it is corrupt or
// differs from the copy it did use: fsck restores it from that copy.
struct DamagedSuperblockCopy {
  uint32_t member_index = 0;  // into AssembledVolume::members
  uint64_t offset = 0;        // kPrimarySuperblockOffset or kBackupSuperblockOffset
  std::string problem;        // the warning, naming the member
};

// A member smaller than the volume needs (truncated, or a device that
// shrank): accepted only by a read-only assembly that asks for it (fsck -n
// lists what is lost).
struct ShortMember {
  uint32_t member_index = 0;
  uint64_t size_bytes = 0;  // what the member holds now
};

struct AssembledVolume {
  // Member 0's; the shared fields hold for every member. member_data_size
  // is the smallest any used copy or grow-lagging backup records (see
  // interrupted_grow).
  Superblock superblock;
  VolumeGeometry geometry;
  std::vector<MemberFile> members;                    // members[i] is member index i, open and locked
  std::vector<Superblock> member_superblocks;         // [i]: the copy assembly used for member i
  std::vector<std::string> warnings;                  // e.g. "member X: primary superblock corrupt (...), using backup"
  std::vector<DamagedSuperblockCopy> damaged_copies;  // one per such warning, in member index order
  std::vector<ShortMember> short_members;             // only with allow_short
  // Set (to the warning, also in `warnings`) when some superblock copy
  // records a larger member_data_size than superblock.member_data_size: a
  // `peregrine grow` stopped half-way. Not damage: the volume is
  // consistent at the smaller size, and running grow again finishes.
  std::string interrupted_grow;
};

// allow_short (read_only only): a member smaller than the volume needs is
// kept and listed in short_members instead of refused.
Expected<AssembledVolume> assemble(const std::vector<std::string>& paths, MemberFile::Mode mode,
                                   bool allow_short = false);

}  // namespace peregrine
