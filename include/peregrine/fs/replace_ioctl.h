// The ioctl by which `peregrine replace --old OLD --new NEW MOUNTPOINT` asks
// the daemon serving a volume to replace one of its members while it stays
// mounted, and then follows the copy: the mount point's directory, opened
// read-only, gets PEREGRINE_IOC_REPLACE with a ReplaceIoctl (the kernel
// copies the struct both ways, as for PEREGRINE_IOC_GROW).
//
// `op` kReplaceStart: OLD (a member's path, absolute) and NEW (absolute)
// are checked and the copy starts in the background; the reply says so or
// why not (`error`, a positive errno, and `message`). kReplaceStatus: the
// reply gives the state of the latest replace of this mount (its OLD, NEW
// and rate limit in the request's fields). The ioctl call
// itself fails with ENOTTY (a daemon without online replace), EPERM (not
// root) or EROFS (read-only).
//
// Thread rules: plain definitions, any thread.
#pragma once

#include <linux/ioctl.h>

#include <cstdint>

namespace peregrine::fs {

enum ReplaceOp : uint32_t { kReplaceStart = 1, kReplaceStatus = 2 };

enum ReplaceState : uint32_t {
  kReplaceNone = 0,       // no replace since the mount
  kReplaceCopying = 1,    // writes reach both members; the copy runs
  kReplaceSwitching = 2,  // copied and synced; the superblocks switch
  kReplaceDone = 3,       // NEW is the member; OLD is no member and closed
  kReplaceFailed = 4,     // given up: OLD is still the member (message says why)
};

inline constexpr uint32_t kReplaceForce = 1;  // overwrite what NEW holds

struct ReplaceIoctl {
  // In.
  uint32_t op;
  uint32_t flags;               // kReplaceForce
  uint64_t rate_limit_bytes;    // per second, 0: as fast as the members go
  char old_member[1024];        // NUL-terminated
  char new_member[4096];        // NUL-terminated
  // Out.
  int32_t error;                // of this call: 0, or a positive errno (message says why)
  uint32_t state;               // ReplaceState of the latest replace
  uint32_t member_index;
  uint32_t reserved;
  uint64_t done_bytes;          // of the copy
  uint64_t total_bytes;
  uint64_t elapsed_ms;          // since the copy started
  char message[3016];           // NUL-terminated: why it failed, or what it did
};
static_assert(sizeof(ReplaceIoctl) == 8192);

inline constexpr unsigned long kReplaceIoctl = _IOWR('P', 0x52, ReplaceIoctl);

}  // namespace peregrine::fs
