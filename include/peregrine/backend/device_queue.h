// DeviceQueue: one member drive as its drive thread sees it — start IOs,
// submit them in one go, reap completions, say when to look again.
//
// Implementations stack: UringDevice does real io_uring IO on the member;
// ShapedDevice (tests, benchmarks) wraps it to behave like an SSD with a
// given latency, internal queue depth, IOPS and bandwidth; FaultInjecting-
// Device (tests) wraps either to fail or shorten chosen IOs.
//
// The drive thread does not sleep in the device: it sleeps in the
// CompletionWaker it shares with its other drives, which every completion
// of an attached device signals.
//
// Thread rules: a DeviceQueue is not thread-safe. Every call must be made
// by the holder of the owning drive's dispatch lock (the drive thread, or a
// submitting thread dispatching inline), attach_waker() before any IO.
#pragma once

#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

#include "peregrine/util/result.h"

namespace peregrine {

class CompletionWaker;

enum class IoOp : uint8_t { read, write, flush };

// One IO on the member. `tag` comes back in its completion.
struct DeviceIo {
  uint32_t tag = 0;
  IoOp op = IoOp::read;
  uint64_t offset = 0;  // member byte offset
  const iovec* iov = nullptr;
  uint32_t iovcnt = 0;
  // A read the member's own page cache may serve (Request::via_page_cache);
  // a device without a page-cache descriptor reads directly as ever.
  bool via_page_cache = false;
};

struct DeviceCompletion {
  uint32_t tag = 0;
  int32_t result = 0;  // bytes transferred (may be short), or -errno
};

class DeviceQueue {
 public:
  virtual ~DeviceQueue() = default;

  // Queues one IO for the next submit(). iov must stay valid until the IO
  // completes. At most `capacity()` IOs may be outstanding.
  virtual void start(const DeviceIo& io) = 0;
  // Hands every started IO to the kernel in one system call.
  virtual void submit() = 0;
  // Moves finished IOs into `out`; returns how many. Never blocks.
  virtual size_t reap(std::span<DeviceCompletion> out) = 0;
  // Makes every completion signal `waker` (and the device's own wake-ups
  // wake it). Once, before the first IO; `waker` outlives the device's use.
  virtual Status attach_waker(CompletionWaker& waker) = 0;
  // Called before the drive thread sleeps: returns false if reap() already
  // has something to report (then do not sleep); otherwise lowers
  // `deadline_ns` (0 = none) to when reap() will next have something that
  // no completion announces (a shaped member's modelled completion).
  virtual bool prepare_sleep(uint64_t& deadline_ns) = 0;
  // True if reap() has something now that no kernel completion will
  // announce (IO finished inside start(), e.g. copy-inline members), so a
  // thread that dispatched while the drive thread sleeps must wake it.
  virtual bool has_ready() const = 0;
  // reap(), but only of IO that finished inside start() (copy-inline
  // members, injected failures): it never touches the kernel's completion
  // queue, which the drive thread reaps.
  // For a thread dispatching inline (Drive::complete_inline).
  virtual size_t reap_finished_inline(std::span<DeviceCompletion> out) = 0;
  // Whether flush_blocking() may be called: false for the devices that
  // model a drive's timing or faults for tests, whose flushes must pass
  // through start() and their model. Thread-safe.
  virtual bool flushes_blocking() const { return false; }
  // A flush made by the calling thread, blocking, without the drive's
  // dispatch lock: every write the member completed before the call is
  // durable when it returns 0 (else -errno). Thread-safe.
  virtual int flush_blocking() { return -EOPNOTSUPP; }
  // Whether transfer_blocking() may be called: as flushes_blocking().
  virtual bool transfers_blocking() const { return false; }
  // Whether the member is memory (start() copies at once, and so does
  // transfer_blocking()): a lone piece is then moved by the submitting
  // thread itself, past the tags and the backlog (Submitter::add). Devices
  // that wrap another say false: their IO must pass through start().
  virtual bool copies_inline() const { return false; }
  // A read or write of one buffer made by the calling thread, blocking,
  // without the drive's dispatch lock, continued after short transfers:
  // the bytes moved (fewer than `len` only where the member ends), or
  // -errno. For a lone synchronous IO, whose trip through the ring would
  // cost hand-offs between threads. Thread-safe.
  virtual int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
    (void)op, (void)offset, (void)buf, (void)len;
    return -EOPNOTSUPP;
  }
};

}  // namespace peregrine
