// Advisory locks that keep two peregrine processes off the same member.
//
// A running daemon holds flock(LOCK_EX) on every member descriptor; mkfs
// takes LOCK_EX too, and read-only assembly (`peregrine info`, fsck -n)
// takes LOCK_SH, so readers may share but never overlap a writer. The lock
// belongs to the MemberFile's open file description: it lasts until that
// MemberFile is closed, so there is no unlock call. Any thread; the caller
// must not lock one MemberFile from two threads at once.
#pragma once

#include <span>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"

namespace peregrine {

enum class LockMode { shared, exclusive };

// Never blocks: refuses with "member X: in use by another peregrine process"
// (EBUSY) when another open of the same member holds a conflicting lock.
Status lock_member(const MemberFile& member, LockMode mode);

// Locks every member, stopping at the first refusal.
Status lock_members(std::span<const MemberFile> members, LockMode mode);

// The lock that goes with opening a member in `mode`.
inline LockMode lock_mode_for(MemberFile::Mode mode) {
  return mode == MemberFile::Mode::read_write ? LockMode::exclusive : LockMode::shared;
}

}  // namespace peregrine
