// UringDevice: real IO on one member file or block device through its own
// io_uring. The member's fd is registered with the ring; each IO's
// user_data is its tag, so a completion maps straight back to its slot.
// Wake-ups from other threads arrive as a completed read on an eventfd
// that the ring always has posted; a wake deadline (for shaping) is the
// timeout of the waiting io_uring_enter, so one call waits for all three.
//
// Copy-inline mode is for members on tmpfs or ramfs only. Such files cannot
// take non-blocking IO, so the ring would hand every IO to a kernel worker
// thread and wake the drive thread when it is done: two context switches
// for a memory copy. In this mode start() does the preadv/pwritev itself
// and reap() returns its result; the ring still carries wake-ups and timers.
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
  uint32_t sq_entries = 0;       // 0 = room for every outstanding IO, a resubmission of each and the wake-up read
  bool sqpoll = false;           // IORING_SETUP_SQPOLL
  uint32_t sqpoll_idle_ms = 1000;
  bool copy_inline = false;      // do the IO in start() (memory-backed members only)
};

class UringDevice final : public DeviceQueue {
 public:
  // `capacity`: the most IOs that will be outstanding at once.
  static Expected<UringDevice*> create(int fd, uint32_t capacity, const RingOptions& options = {});
  ~UringDevice() override;
  UringDevice(const UringDevice&) = delete;
  UringDevice& operator=(const UringDevice&) = delete;

  void start(const DeviceIo& io) override;
  void submit() override;
  size_t reap(std::span<DeviceCompletion> out) override;
  bool prepare_sleep() override { return !has_ready(); }
  bool has_ready() const override { return inline_head_ != inline_done_.size(); }
  void sleep() override;
  void wake() override;
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override;

  // The next sleep() returns by CLOCK_MONOTONIC `deadline_ns` at the latest
  // (one io_uring_enter with a timeout: no timer SQE, no extra system
  // call). Drive thread only; cleared when that sleep() returns.
  void set_wake_deadline(uint64_t deadline_ns) { wake_deadline_ns_ = deadline_ns; }

 private:
  UringDevice() = default;
  io_uring_sqe* get_sqe();
  void post_wake_read();
  void copy_now(const DeviceIo& io);

  io_uring ring_{};
  bool ring_ready_ = false;
  int event_fd_ = -1;
  uint64_t wake_value_ = 0;
  uint64_t wake_deadline_ns_ = 0;  // 0 = sleep until a completion or wake()
  int fd_ = -1;
  bool copy_inline_ = false;
  bool sqpoll_ = false;
  std::vector<DeviceCompletion> inline_done_;  // results of copy-inline IOs not yet reaped
  size_t inline_head_ = 0;                     // first of them not yet reaped
};

}  // namespace peregrine
