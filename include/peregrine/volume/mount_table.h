// The kernel's mount table as peregrine reads it: every mount of this
// process's mount namespace from /proc/self/mountinfo, in mount order, with
// the octal escapes (\040 for a space, ...) undone. Read afresh on each
// call, and never by touching a mount point itself: the daemon of a FUSE
// mount may be stopped, and a stat of its mount point would hang.
// Thread rules: any thread.
#pragma once

#include <string>
#include <vector>

namespace peregrine {

struct MountTableEntry {
  std::string mountpoint;
  std::string fstype;   // "fuse.peregrine" for a peregrine volume
  std::string source;   // what df and findmnt show as the source
  std::string options;  // the mount's options, then the superblock's ("rw,nosuid,...,rw,user_id=0")
};

std::vector<MountTableEntry> read_mount_table();

// `path` (absolute) with its directory resolved (symlinks, "..") but not
// its last component, as the mount table would spell it for a mount point
// there: resolving the mount point itself would ask its daemon.
std::string resolve_parent(const std::string& path);

}  // namespace peregrine
