// A member drive opened for direct IO: a regular file or a block device,
// and for reads through its page cache where that is safe.
//
// MemberFile owns the file descriptors and knows the facts the engine and
// the volume format need: usable size, logical block size (the O_DIRECT
// alignment), queue depth and NUMA node (read from sysfs for block devices).
// Opening never writes.
//
// Thread rules: a MemberFile is immutable after open() (and, in tests,
// route_writes_through()) and may be read from any thread; the descriptors
// are used by one drive thread for IO.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "peregrine/backend/device_queue.h"

#include "peregrine/util/result.h"

namespace peregrine {

struct MemberInfo {
  std::string path;
  bool is_block_device = false;
  uint64_t size_bytes = 0;             // file size or device capacity
  uint32_t logical_block_size = 4096;  // O_DIRECT alignment for offsets, lengths, buffers
  uint32_t queue_depth = 0;            // from sysfs nr_requests; 0 = unknown
  int numa_node = -1;                  // from sysfs; -1 = unknown
  uint64_t dev = 0;                    // st_dev of a file, st_rdev of a block device
  uint64_t ino = 0;                    // st_ino (identifies a file member)
  // A file on tmpfs or ramfs: its IO is a memory copy that cannot do
  // non-blocking submission, so io_uring would hand each IO to a worker.
  bool memory_backed = false;
};

class MemberFile {
 public:
  // inspect: read-only and a block device is not claimed (no O_EXCL), so a
  // member in use can be looked at (`peregrine examine`, `peregrine scan`);
  // on a filesystem without O_DIRECT it falls back to buffered reads.
  enum class Mode { read_only, read_write, inspect };

  // Opens `path` with O_DIRECT. A block device is opened O_EXCL (except in
  // Mode::inspect) so that a mounted or otherwise claimed device is refused.
  static Expected<MemberFile> open(const std::string& path, Mode mode);

  MemberFile(MemberFile&& other) noexcept;
  MemberFile& operator=(MemberFile&& other) noexcept;
  MemberFile(const MemberFile&) = delete;
  MemberFile& operator=(const MemberFile&) = delete;
  ~MemberFile();

  int fd() const { return fd_; }
  // A member file on ext4 or XFS, not opened to inspect: the file opened
  // once more, read-only, without O_DIRECT, for reads the kernel's page
  // cache of the member may serve and read on past (DriveSpec::
  // page_cache_fd); else -1. Only those filesystems drop the cached pages
  // a direct write covers when it completes, however it was submitted;
  // block devices and other filesystems are read direct. A second open that
  // fails (EMFILE) or finds another file under the name leaves -1 too: the
  // member is then read direct, as before. Offline commands open it and
  // never use it: one descriptor.
  int page_cache_fd() const { return page_cache_fd_; }
  const MemberInfo& info() const { return info_; }

  // Synchronous, aligned IO for setup paths (mkfs, assembly) that run before
  // the engine starts. Retries short transfers; returns -errno or 0.
  int pread_full(void* buf, uint64_t len, uint64_t offset) const;
  int pwrite_full(const void* buf, uint64_t len, uint64_t offset) const;
  int sync() const;
  // Tells the member that [offset, offset + len) holds nothing it must
  // keep (TRIM): BLKDISCARD on a block device, fallocate(PUNCH_HOLE |
  // KEEP_SIZE) on a file, which gives the blocks back to the filesystem
  // under it. What the range reads afterwards is unspecified. Offsets and
  // length multiples of the logical block size. 0, or -errno (-EOPNOTSUPP
  // when the device or the filesystem under the file cannot). Any thread:
  // the caller makes sure no IO to the range is in flight.
  int discard(uint64_t offset, uint64_t len) const;

  // Tests only: from now on pwrite_full() and sync() go through `layer`'s
  // transfer_blocking() and flush_blocking() (the power-cut layer over the
  // member: volatile_cache_device.h), so that an offline command's writes
  // can be cut at like the daemon's. Called before the file is shared.
  void route_writes_through(std::shared_ptr<DeviceQueue> layer) { write_layer_ = std::move(layer); }
  bool writes_routed() const { return write_layer_ != nullptr; }

 private:
  MemberFile(int fd, MemberInfo info) : fd_(fd), info_(std::move(info)) {}
  void close_all();
  int fd_ = -1;
  int page_cache_fd_ = -1;
  MemberInfo info_;
  std::shared_ptr<DeviceQueue> write_layer_;
};

}  // namespace peregrine
