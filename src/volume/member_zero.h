// Zeroing a byte range of a member, as mkfs and grow do: in place when the
// storage can (a punched hole in a file, BLKZEROOUT on a device), else by
// writing zeros; or by writing zeros always, where mkfs wants the storage
// allocated (a file member's journal share). Setup-time, synchronous IO
// through MemberFile. Internal to peregrine_volume.
// Thread rules: one thread per MemberFile at a time.
#pragma once

#include <cstdint>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/result.h"

namespace peregrine {

// Zeroed at the end of every member by mkfs and by grow at the new end:
// GPT keeps its backup header there, md 0.90/1.0 and ZFS keep labels
// there; libblkid would still report them.
inline constexpr uint64_t kTailWipe = 1024 * 1024;

// The size of the zeros buffer mkfs and grow write with where the storage
// cannot zero in place.
inline constexpr uint64_t kZeroChunkBytes = 1024 * 1024;

// Makes [begin, end) of `m` read as zeros; `zeros` (all zero, aligned) is
// written in chunks of its size where the storage cannot zero in place.
// Does not sync. Errors name the member and the offset. Members whose
// writes go through the power-cut layer (tests) get written zeros.
Status zero_member_range(const MemberFile& m, uint64_t begin, uint64_t end, const AlignedBuffer& zeros);
// Writes zeros over [begin, end) of `m`, so that the storage under the
// range is allocated and initialised (a file's host filesystem has nothing
// left to allocate or convert there). Does not sync. Errors name the
// member and the offset.
Status write_member_zeros(const MemberFile& m, uint64_t begin, uint64_t end, const AlignedBuffer& zeros);

}  // namespace peregrine
