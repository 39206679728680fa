// Who holds a member's lock when lock_member() finds it taken and not
// marked exiting (member_lock.h): the holding process, from /proc/locks,
// and, when it is a FUSE daemon, where the member's mount record says the
// volume is mounted and whether that mount is still in the mount table.
// A daemon whose mount is gone (a plain `umount` returns before the daemon
// has noticed, and a stopped daemon notices only when it runs again) is
// about to let go; one whose mount is still there is serving.
//
// Reads /proc and the member's mount record; never touches a mount point
// (its daemon may be stopped). Internal to peregrine_volume.
//
// Thread rules: any thread.
#pragma once

#include <sys/types.h>

#include <string>

#include "peregrine/backend/member_file.h"

namespace peregrine {

struct MemberHolder {
  pid_t pid = 0;             // the process holding the flock; 0: not known
  bool fuse_daemon = false;  // it has /dev/fuse open: it serves (or served) a FUSE mount
  // Where the member's mount record says its volume is mounted read-write
  // ("" when the record says it was unmounted cleanly, or has none).
  std::string mountpoint;
  bool still_mounted = false;  // a fuse.peregrine mount is at `mountpoint` now

  // A daemon whose mount has gone: waiting for it is worth it.
  bool mount_gone() const { return fuse_daemon && !mountpoint.empty() && !still_mounted; }
};

// `member` is open (any mode) and its flock is held by another process.
MemberHolder find_member_holder(const MemberFile& member);

}  // namespace peregrine
