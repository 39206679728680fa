// The mount table as the commands need it: which mount holds a path, what
// is mounted exactly at a directory, and the advice for a peregrine mount
// whose daemon is gone ("Transport endpoint is not connected"). Read from
// /proc/self/mountinfo on each call.
// Thread rules: main thread only.
#pragma once

#include <cerrno>
#include <optional>
#include <string>

#include "peregrine/util/result.h"

namespace peregrine::cli {

struct MountEntry {
  std::string mountpoint;
  std::string fstype;  // "fuse.peregrine" for ours
  // "peregrine:LABEL" or "peregrine:UUID" ("peregrine" from older daemons),
  // or what the user wrote as the source (mount(8)'s SPEC, a volume NAME).
  std::string source;
};

// The mount that holds `path` (absolute, resolved): the entry with the
// longest mount point that is a prefix of it; the last such line wins (a
// later mount over the same directory hides the earlier one).
std::optional<MountEntry> mount_of(const std::string& path);

// The peregrine mount that holds `arg` (any path on the volume, resolved
// here), or why there is none: the path's own error, a dead mount
// (dead_mount_advice), no mount, or a mount of another type.
Expected<MountEntry> peregrine_mount(const std::string& arg);

// The visible (last) mount whose mount point is exactly `dir` (absolute,
// resolved), if any.
std::optional<MountEntry> mount_at(const std::string& dir);

// The peregrine mount exactly at `arg` (a mount point as the user typed
// it), if any. Looks in the mount table only: touching the mount point
// would ask its daemon.
std::optional<MountEntry> peregrine_mount_at(const std::string& arg);

// For `path` that answered ENOTCONN: what it is and how to clear it, e.g.
// "/mnt/pg: a dead peregrine mount (peregrine:data): its daemon is gone
// (transport endpoint is not connected); clear it with 'umount /mnt/pg' or
// 'fusermount3 -u /mnt/pg'".
std::string dead_mount_advice(const std::string& path);
// Whether errno `e` from a path under a FUSE mount says its daemon is gone:
// ENOTCONN, or ECONNABORTED for a request the kernel was holding when it
// aborted the connection (with FUSE over io_uring the abort comes when the
// dead daemon's rings are torn down, a moment after it exited).
inline bool dead_mount_errno(int e) { return e == ENOTCONN || e == ECONNABORTED; }

// Checks that `mountpoint` (absolute) can take a new peregrine mount: it
// exists and is a directory, it is not a dead mount (dead_mount_advice), and
// no live peregrine volume is mounted exactly there unless `force` (mounting
// over it would hide that volume). Errors name the mount point and, for a
// live mount, the volume.
Status check_mountpoint(const std::string& mountpoint, bool force);

}  // namespace peregrine::cli
