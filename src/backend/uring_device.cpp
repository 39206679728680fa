#include "peregrine/backend/uring_device.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "peregrine/backend/completion_waker.h"

namespace peregrine {

Expected<UringDevice*> UringDevice::create(int fd, uint32_t capacity, const RingOptions& options,
                                           int page_cache_fd) {
  auto* dev = new UringDevice();
  dev->fd_ = fd;
  dev->copy_inline_ = options.copy_inline;
  dev->sqpoll_ = options.sqpoll;
  // Every outstanding IO plus a resubmission of each: start() never allocates.
  if (options.copy_inline) dev->inline_done_.reserve(capacity * 2 + 8);
  // Room for every IO and a resubmission of each short one, so get_sqe()
  // only runs dry when a round is huge. A smaller SQ
  // (sq_entries) works too: get_sqe() then submits as it goes. The CQ
  // always holds every completion that can be outstanding.
  unsigned needed = 8;
  while (needed < capacity * 2 + 8) needed <<= 1;
  unsigned entries = options.sq_entries != 0 ? options.sq_entries : needed;
  io_uring_params params{};
  params.flags = IORING_SETUP_CQSIZE;
  params.cq_entries = std::max(needed, entries) * 2;
  if (options.sqpoll) {
    params.flags |= IORING_SETUP_SQPOLL;
    params.sq_thread_idle = options.sqpoll_idle_ms;
  }
  int rc = io_uring_queue_init_params(entries, &dev->ring_, &params);
  if (rc < 0) {
    delete dev;
    std::string what = options.sqpoll ? "io_uring setup with SQPOLL failed: " : "io_uring setup failed: ";
    return Status::error(-rc, what + std::strerror(-rc));
  }
  dev->ring_ready_ = true;
  if ((params.features & IORING_FEAT_EXT_ARG) == 0) {
    delete dev;
    // The drive thread's timed wait (CompletionWaker) needs it.
    return Status::error(ENOSYS, "io_uring lacks IORING_FEAT_EXT_ARG: Linux 5.11 or newer is needed");
  }
  // A memory member's copies are made in start(), on fd alone.
  dev->has_page_cache_fd_ = page_cache_fd >= 0 && !options.copy_inline;
  const int files[2] = {fd, page_cache_fd};
  rc = io_uring_register_files(&dev->ring_, files, dev->has_page_cache_fd_ ? 2 : 1);
  if (rc < 0) {
    delete dev;
    return Status::error(-rc, std::string("io_uring file registration failed: ") + std::strerror(-rc));
  }
  return dev;
}

UringDevice::~UringDevice() {
  if (!ring_ready_) return;
  // The ring's reference to the member goes now, on this thread. Left to
  // the ring's teardown, which the kernel runs later on a worker, it kept
  // a block device claimed (O_EXCL) after the member was closed and the
  // process gone: `umount` then `peregrine fsck` found the device busy.
  io_uring_unregister_files(&ring_);
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* UringDevice::get_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  while (sqe == nullptr) {
    // SQ ring full: hand what is queued to the kernel and take the next
    // slot. With SQPOLL the submit only publishes; wait for the poller to
    // make room instead of spinning.
    io_uring_submit(&ring_);
    if (sqpoll_) io_uring_sqring_wait(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

Status UringDevice::attach_waker(CompletionWaker& waker) {
  int rc = io_uring_register_eventfd(&ring_, waker.fd());
  if (rc < 0) return Status::error(-rc, std::string("io_uring eventfd registration failed: ") + std::strerror(-rc));
  return Status::ok();
}

void UringDevice::copy_now(const DeviceIo& io) {
  ssize_t n = 0;
  switch (io.op) {
    case IoOp::read: n = ::preadv(fd_, io.iov, static_cast<int>(io.iovcnt), static_cast<off_t>(io.offset)); break;
    case IoOp::write: n = ::pwritev(fd_, io.iov, static_cast<int>(io.iovcnt), static_cast<off_t>(io.offset)); break;
    case IoOp::flush: n = ::fdatasync(fd_); break;
  }
  inline_done_.push_back(DeviceCompletion{io.tag, n < 0 ? -errno : static_cast<int32_t>(n)});
}

void UringDevice::start(const DeviceIo& io) {
  if (copy_inline_) {
    copy_now(io);
    return;
  }
  io_uring_sqe* sqe = get_sqe();
  switch (io.op) {
    case IoOp::read: {
      const int file = io.via_page_cache && has_page_cache_fd_ ? 1 : 0;
      io_uring_prep_readv(sqe, file, io.iov, io.iovcnt, io.offset);
      break;
    }
    case IoOp::write: io_uring_prep_writev(sqe, 0, io.iov, io.iovcnt, io.offset); break;
    case IoOp::flush: io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC); break;
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, io.tag);
}

int UringDevice::flush_blocking() {
  for (;;) {
    if (::fdatasync(fd_) == 0) return 0;
    if (errno != EINTR) return -errno;
  }
}

int64_t UringDevice::transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
  uint64_t done = 0;
  while (done < len) {
    const off_t at = static_cast<off_t>(offset + done);
    const ssize_t n = op == IoOp::write ? ::pwrite(fd_, buf + done, len - done, at)
                                        : ::pread(fd_, buf + done, len - done, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;  // the member ends here
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

void UringDevice::submit() {
  for (;;) {
    int rc = io_uring_submit(&ring_);
    if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) break;
  }
}

size_t UringDevice::reap_finished_inline(std::span<DeviceCompletion> out) {
  size_t n = 0;
  while (n < out.size() && inline_head_ < inline_done_.size()) out[n++] = inline_done_[inline_head_++];
  if (inline_head_ == inline_done_.size()) {
    inline_done_.clear();
    inline_head_ = 0;
  }
  return n;
}

size_t UringDevice::reap(std::span<DeviceCompletion> out) {
  size_t n = reap_finished_inline(out);
  unsigned head;
  unsigned seen = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    if (n == out.size()) break;
    ++seen;
    out[n++] = DeviceCompletion{static_cast<uint32_t>(io_uring_cqe_get_data64(cqe)), cqe->res};
  }
  io_uring_cq_advance(&ring_, seen);
  return n;
}

}  // namespace peregrine
