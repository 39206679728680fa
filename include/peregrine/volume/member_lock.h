// Advisory locks that keep two peregrine processes off the same member.
//
// A running daemon holds flock(LOCK_EX) on every member descriptor; mkfs
// takes LOCK_EX too, and read-only assembly (`peregrine info`, fsck -n)
// takes LOCK_SH, so readers may share but never overlap a writer. The lock
// belongs to the MemberFile's open file description: it lasts until that
// MemberFile is closed, so there is no unlock call.
//
// A daemon that has stopped serving (unmounted, or SIGTERM) still holds its
// locks while it checkpoints and flushes. It says so with a second, POSIX
// record lock (F_RDLCK on the byte at kExitingMarkOffset, which lies past
// the end of any member), taken by mark_members_exiting() and dropped by
// the kernel when the daemon closes its members or exits; F_GETLK names
// its pid. A lock_member() that finds a member held by such a daemon waits
// for the daemon to exit (up to LockWait::limit) instead of refusing; so
// does open_member_locked() for a block device the daemon still claims.
//
// A daemon can also hold a member unmarked after its mount is gone: a
// plain `umount` returns once the kernel lets go, before the daemon has
// noticed (a stopped daemon notices only when it runs again). The member's
// mount record says where its volume is mounted; when the holder is a FUSE
// daemon and that mount point is no longer in the mount table, the member
// is waited for the same way (lock_holder.h), and when it is, the refusal
// says where the volume is mounted.
//
// Thread rules: any thread; the caller must not lock one MemberFile from two
// threads at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"

namespace peregrine {

enum class LockMode { shared, exclusive };

// The byte whose POSIX read lock marks a member as held by an exiting
// daemon (docs/format.md, section 7). Beyond any real member size.
inline constexpr uint64_t kExitingMarkOffset = uint64_t{1} << 62;

struct LockWait {
  // How long to wait for a member held by an exiting daemon; 0: do not wait.
  std::chrono::milliseconds limit{60000};
  // Told once per member when a wait begins; unset: a line on stderr.
  std::function<void(const std::string&)> on_wait;
};

// Refuses at once with "member X: in use by another peregrine process
// (pid P)" (EBUSY) when another open of the same member holds a
// conflicting lock, or with "in use: its volume is mounted at DIR" when the
// holder is the daemon serving the volume there; unless that holder is a
// daemon marked exiting, or one whose mount is gone: then waits (pidfd)
// until it has exited and takes the lock, or refuses after wait.limit
// naming the daemon's pid. The wait for a daemon whose mount is gone is
// told (on_wait) only once it has lasted a second.
Status lock_member(const MemberFile& member, LockMode mode, const LockWait& wait = {});

// MemberFile::open + lock_member. A block device claimed (O_EXCL) by a
// daemon marked exiting is waited for the same way: the daemon keeps its
// claim until it exits, so `umount` followed at once by fsck or mount
// would otherwise find the device busy. Any other claim is refused at once
// ("device is busy").
Expected<MemberFile> open_member_locked(const std::string& path, MemberFile::Mode mode, const LockWait& wait = {});

// Locks every member, stopping at the first refusal.
Status lock_members(std::span<const MemberFile> members, LockMode mode, const LockWait& wait = {});

// The lock that goes with opening a member in `mode`.
inline LockMode lock_mode_for(MemberFile::Mode mode) {
  return mode == MemberFile::Mode::read_write ? LockMode::exclusive : LockMode::shared;
}

// For the daemon when it stops serving: marks each member (by path; the
// process must hold it open and locked) as held by an exiting daemon. The
// marks last until this process closes a descriptor of the member or
// exits; the descriptors opened here stay open until then. Errors name the
// member; a member that cannot be marked only loses the waiting.
Status mark_members_exiting(const std::vector<std::string>& paths);

// The pid of the process that marked `fd`'s member exiting, or 0.
pid_t exiting_holder(int fd);

}  // namespace peregrine
