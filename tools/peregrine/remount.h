// `mount -o remount,...` of a peregrine volume (mount.peregrine): changes
// what the kernel decides per mount and superblock (ro/rw, nosuid, nodev,
// noexec, sync, dirsync) with mount(2) MS_REMOUNT, while the daemon keeps
// serving. A daemon that writes nothing (mounted ro) cannot become
// writable this way; the daemon's settings (fuse.*, the access-time rule)
// are fixed at mount.
// Thread rules: main thread of the helper.
#pragma once

#include <string>

namespace peregrine::cli {

// Remounts the peregrine volume mounted at `dir` with `options` (the -o
// list, "remount" among them, as mount(8) merges it: this call's options
// after the mount's current ones). Returns mount(8)'s exit code: 0, 1 bad
// invocation, 32 failed; says why on stderr.
int remount_volume(const std::string& dir, const std::string& options, bool verbose, bool fake);

}  // namespace peregrine::cli
