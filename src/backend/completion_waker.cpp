#include "peregrine/backend/completion_waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "peregrine/util/clock.h"

namespace peregrine {

Expected<std::unique_ptr<CompletionWaker>> CompletionWaker::create() {
  std::unique_ptr<CompletionWaker> w(new CompletionWaker());
  w->event_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (w->event_fd_ < 0) {
    int e = errno;
    return Status::error(e, std::string("eventfd: ") + std::strerror(e));
  }
  io_uring_params params{};
  int rc = io_uring_queue_init_params(4, &w->ring_, &params);
  if (rc < 0) return Status::error(-rc, std::string("io_uring setup failed: ") + std::strerror(-rc));
  w->ring_ready_ = true;
  if ((params.features & IORING_FEAT_EXT_ARG) == 0)
    return Status::error(ENOSYS, "io_uring lacks IORING_FEAT_EXT_ARG: Linux 5.11 or newer is needed");
  return w;
}

CompletionWaker::~CompletionWaker() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (event_fd_ >= 0) ::close(event_fd_);
}

void CompletionWaker::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof one);
  (void)n;  // fails only on counter overflow, which the next read clears
}

void CompletionWaker::sleep(uint64_t deadline_ns) {
  if (!read_posted_) {
    // Posted only now, not after each wake-up: between sleeps the eventfd
    // just counts, which costs the signalling rings nothing.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, event_fd_, &value_, sizeof value_, 0);
    read_posted_ = true;
  }
  io_uring_cqe* cqe = nullptr;
  int rc;
  do {
    if (deadline_ns == 0) {
      rc = io_uring_submit_and_wait(&ring_, 1);
    } else {
      uint64_t now = monotonic_ns();
      if (deadline_ns <= now) {
        rc = io_uring_submit(&ring_);
        break;
      }
      uint64_t rel = deadline_ns - now;
      __kernel_timespec ts{static_cast<long long>(rel / 1000000000ull), static_cast<long long>(rel % 1000000000ull)};
      rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    }
  } while (rc == -EINTR);
  unsigned head;
  unsigned seen = 0;
  io_uring_for_each_cqe(&ring_, head, cqe) { ++seen; }
  if (seen != 0) read_posted_ = false;  // the only SQE this ring carries
  io_uring_cq_advance(&ring_, seen);
}

}  // namespace peregrine
