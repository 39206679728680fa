// The ioctl by which `peregrine grow MOUNTPOINT` asks the daemon serving a
// volume to grow it online: the mount point's directory, opened read-only,
// gets PEREGRINE_IOC_GROW with a zeroed GrowIoctl; the daemon fills it in
// and replies (the kernel copies the struct both ways, as for any FUSE
// ioctl whose number encodes its size). `error` 0: grown, sizes filled in;
// else a positive errno with `message` saying why (nothing to grow, a
// damaged superblock copy, ...). The ioctl call itself fails with ENOTTY
// (a daemon without online grow), EPERM (not root) or EROFS (read-only).
// Thread rules: plain definitions, any thread.
#pragma once

#include <linux/ioctl.h>

#include <cstdint>

namespace peregrine::fs {

struct GrowIoctl {
  uint64_t old_member_data_size;
  uint64_t new_member_data_size;
  uint64_t old_data_area;  // bytes of the data area (what df counts)
  uint64_t new_data_area;
  uint32_t member_count;
  int32_t error;
  uint32_t flags;     // kGrowFinishedInterrupted
  char message[980];  // NUL-terminated
};
static_assert(sizeof(GrowIoctl) == 1024);

inline constexpr uint32_t kGrowFinishedInterrupted = 1;  // some copy already recorded a larger size

inline constexpr unsigned long kGrowIoctl = _IOWR('P', 0x47, GrowIoctl);

}  // namespace peregrine::fs
