// UringDevice: real IO on one member file or block device through its own
// io_uring. The member's fd is registered with the ring; each IO's
// user_data is its tag, so a completion maps straight back to its slot.
// The ring signals the drive thread's CompletionWaker on every completion.
//
// Copy-inline mode is for members on tmpfs or ramfs only. Such files cannot
// take non-blocking IO, so the ring would hand every IO to a kernel worker
// thread and wake the drive thread when it is done: two context switches
// for a memory copy. In this mode start() does the preadv/pwritev itself
// and reap() returns its result.
//
// A second descriptor of the member, opened without O_DIRECT
// (DriveSpec::page_cache_fd), takes the reads marked via_page_cache: the
// kernel's page cache of the member answers them, and its read-ahead reads
// on past them. Writes go through the O_DIRECT descriptor. The caller
// hands one only for a member whose filesystem drops the cached pages a
// direct write covers when it completes (MemberFile::page_cache_fd), so a
// cached read never returns bytes older than the member's.
//
// SQPOLL (opt-in) lets a kernel thread take SQEs off the ring as they are
// published, so a round's submit costs no system call while that thread is
// awake; it spins on a CPU for `sqpoll_idle_ms` after the last IO.
//
// Thread rules: see DeviceQueue. wake() may be called from any thread.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <vector>

#include "peregrine/backend/device_queue.h"
#include "peregrine/util/result.h"

namespace peregrine {

// How a member's ring is set up (the [io_uring] settings of peregrine.conf).
struct RingOptions {
  uint32_t sq_entries = 0;  // 0 = room for every outstanding IO and a resubmission of each
  bool sqpoll = false;      // IORING_SETUP_SQPOLL
  uint32_t sqpoll_idle_ms = 1000;
  bool copy_inline = false;  // do the IO in start() (memory-backed members only)
};

class UringDevice final : public DeviceQueue {
 public:
  // `capacity`: the most IOs that will be outstanding at once.
  // `page_cache_fd`: the member opened without O_DIRECT, or -1 (every
  // read direct). Both descriptors stay the caller's.
  static Expected<UringDevice*> create(int fd, uint32_t capacity, const RingOptions& options = {},
                                       int page_cache_fd = -1);
  ~UringDevice() override;
  UringDevice(const UringDevice&) = delete;
  UringDevice& operator=(const UringDevice&) = delete;

  void start(const DeviceIo& io) override;
  void submit() override;
  size_t reap(std::span<DeviceCompletion> out) override;
  Status attach_waker(CompletionWaker& waker) override;
  bool prepare_sleep(uint64_t&) override { return !has_ready() && io_uring_cq_ready(&ring_) == 0; }
  bool has_ready() const override { return inline_head_ != inline_done_.size(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;
  // fdatasync(2) of the member: its fd stays open for the device's life,
  // and a ring's IO and a syscall on one fd may run side by side.
  bool flushes_blocking() const override { return true; }
  int flush_blocking() override;
  // pread(2) / pwrite(2) of the member, on the same terms.
  bool transfers_blocking() const override { return true; }
  bool copies_inline() const override { return copy_inline_; }
  int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) override;

 private:
  UringDevice() = default;
  io_uring_sqe* get_sqe();
  void copy_now(const DeviceIo& io);

  io_uring ring_{};
  bool ring_ready_ = false;
  int fd_ = -1;
  bool has_page_cache_fd_ = false;  // registered as fixed file 1
  bool copy_inline_ = false;
  bool sqpoll_ = false;
  std::vector<DeviceCompletion> inline_done_;  // results of copy-inline IOs not yet reaped
  size_t inline_head_ = 0;                     // first of them not yet reaped
};

}  // namespace peregrine
