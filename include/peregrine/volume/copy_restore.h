// Restoring a superblock copy that assembly could not use (torn, corrupt,
// or differing from its member's other copy) from the copy it did use.
// fsck's repair, and the rerun of `grow --add` whose last write, a
// superblock copy, a power cut tore: the rerun finds the restripe done
// and finishes it by restoring that copy (and any other damaged one:
// the copies it restores from are the committed ones, written before).
//
// Thread rules: as assembly.h; call from the thread that owns `vol`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "peregrine/util/result.h"
#include "peregrine/volume/assembly.h"

namespace peregrine {

// Writes the copy `d` names from vol.member_superblocks[d.member_index],
// syncs and reads it back. `vol` must be assembled read_write; the copy it
// used passed assembly, so it fits the volume.
Status restore_superblock_copy(const AssembledVolume& vol, const DamagedSuperblockCopy& d);

// "member PATH: backup superblock restored from the primary"
std::string describe_restored_copy(const AssembledVolume& vol, const DamagedSuperblockCopy& d);

// Assembles `paths` read_write and restores every damaged copy, telling
// `note` of each. Fails (writing nothing more) on the first error.
Status restore_damaged_copies(const std::vector<std::string>& paths,
                              const std::function<void(const std::string&)>& note);

}  // namespace peregrine
