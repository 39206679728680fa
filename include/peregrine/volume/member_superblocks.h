// Reading and writing the two superblock copies of one member.
//
// Setup-time, synchronous IO through MemberFile (mkfs, assembly, fsck), run
// before the engine owns the member.
//
// Thread rules: one thread per MemberFile at a time.
#pragma once

#include <optional>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

// What one copy of the superblock on a member holds.
struct SuperblockCopy {
  std::optional<Superblock> superblock;  // set when the copy decoded
  std::string problem;                   // why it did not decode, else empty
  bool has_magic = false;                // the magic is there (even if the rest is bad)
};

struct MemberSuperblocks {
  SuperblockCopy primary;
  SuperblockCopy backup;
  bool any_magic() const { return primary.has_magic || backup.has_magic; }
};

// Reads and decodes both copies. Fails only on an IO error; a copy beyond
// the member's end is reported as a problem of that copy.
Expected<MemberSuperblocks> read_member_superblocks(const MemberFile& member);

// Encodes `sb` and writes it at `offset` (kPrimarySuperblockOffset or
// kBackupSuperblockOffset). Does not sync. Errors name the member.
Status write_superblock_copy(const MemberFile& member, const Superblock& sb, uint64_t offset);

// Writes `sb` at `offset`, syncs the member, reads the copy back and checks
// that it holds exactly the encoding of `sb` (and so decodes): for a step
// that relies on the copy being on the member (fsck's repair of one copy
// from the other, grow, grow --add). Writes `sb` as given: the caller sets
// its generation. Errors name the member.
Status write_durable_superblock_copy(const MemberFile& member, const Superblock& sb, uint64_t offset);

// MemberFile::sync, with an error that names the member.
Status sync_member(const MemberFile& member);

}  // namespace peregrine
