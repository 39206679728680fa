// The ioctl by which `peregrine grow --add NEW... MOUNTPOINT` asks the
// daemon serving a volume to restripe it onto more members while it stays
// mounted, and then follows the move: the mount point's directory, opened
// read-only, gets PEREGRINE_IOC_RESTRIPE with a RestripeIoctl (the kernel
// copies the struct both ways, as for PEREGRINE_IOC_GROW).
//
// `op` kRestripeStart: the NEW members (absolute paths, each followed by a
// NUL, in `new_members`) are checked, join the engine, and the move starts
// in the background; the reply says so or why not (`error`, a positive
// errno, and `message`). kRestripeStatus: the state of the latest restripe
// of this mount. The ioctl call itself fails with ENOTTY (a daemon
// without online restripe), EPERM (not root) or EROFS (read-only).
//
// Thread rules: plain definitions, any thread.
#pragma once

#include <linux/ioctl.h>

#include <cstdint>

namespace peregrine::fs {

enum RestripeOp : uint32_t { kRestripeStart = 1, kRestripeStatus = 2 };

enum RestripeState : uint32_t {
  kRestripeNone = 0,       // no restripe since the mount
  kRestripeMoving = 1,     // the units move, window by window
  kRestripeDone = 2,       // the volume has N + k members and their space
  kRestripeStopped = 3,    // given up part-way (message says why and how to finish)
  kRestripeRefused = 4,    // never started: nothing was written to the volume
};

inline constexpr uint32_t kRestripeForce = 1;  // overwrite what a NEW holds

struct RestripeIoctl {
  // In.
  uint32_t op;
  uint32_t flags;             // kRestripeForce
  uint64_t rate_limit_bytes;  // per second, 0: as fast as the members go
  char new_members[4096];     // NUL-terminated paths, one after the other; an empty one ends the list
  // Out.
  int32_t error;              // of this call: 0, or a positive errno (message says why)
  uint32_t state;             // RestripeState of the latest restripe
  uint32_t old_count;
  uint32_t new_count;
  uint64_t done_bytes;        // moved so far
  uint64_t total_bytes;
  uint64_t elapsed_ms;        // since the move started
  uint64_t windows;           // moved and made durable
  uint64_t old_data_area;     // bytes (what df counts), before
  uint64_t new_data_area;     // after (set once done)
  char message[4008];         // NUL-terminated: what it did, or why not
  // Last, so that the fields above keep their offsets across versions.
  // A command of this version asking a daemon of the one before reads
  // the end of that daemon's longer message here: 0, since the daemon
  // zero-fills the struct and its messages are far shorter ("none").
  uint64_t hole_bytes;        // of total_bytes: holes, found and not copied (set once done)
};
static_assert(sizeof(RestripeIoctl) == 8192);

inline constexpr unsigned long kRestripeIoctl = _IOWR('P', 0x41, RestripeIoctl);

}  // namespace peregrine::fs
