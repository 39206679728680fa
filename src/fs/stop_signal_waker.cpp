#include "stop_signal_waker.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <iterator>

namespace peregrine::fs {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr size_t kStops = std::size(kStopSignals);

// For the signal handlers, which can reach nothing else: the eventfd the
// watcher reads, and libfuse's handlers, each called first.
int g_event_fd = -1;
struct sigaction g_libfuse[kStops];

void on_stop_signal(int sig) {
  const int saved_errno = errno;
  for (size_t i = 0; i < kStops; ++i) {
    if (kStopSignals[i] != sig) continue;
    const struct sigaction& fuse = g_libfuse[i];
    if ((fuse.sa_flags & SA_SIGINFO) == 0 && fuse.sa_handler != SIG_DFL && fuse.sa_handler != SIG_IGN)
      fuse.sa_handler(sig);
  }
  if (g_event_fd >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(g_event_fd, &one, sizeof one);
  }
  errno = saved_errno;
}

void interrupt_only(int) {}

}  // namespace

StopSignalWaker::StopSignalWaker() : loop_thread_(pthread_self()) {
  event_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (event_fd_ < 0) return;  // then libfuse's handling alone, as before
  g_event_fd = event_fd_;
  struct sigaction usr1 {};
  usr1.sa_handler = interrupt_only;
  sigemptyset(&usr1.sa_mask);
  // No SA_RESTART: the loop's sem_wait must return (with it, the kernel
  // restarts the futex wait, as strace showed).
  usr1.sa_flags = 0;
  ::sigaction(SIGUSR1, &usr1, nullptr);
  // The watcher takes none of these signals itself.
  sigset_t block, old;
  sigemptyset(&block);
  for (int s : kStopSignals) sigaddset(&block, s);
  sigaddset(&block, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  watcher_ = std::thread([this] { watch(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  for (size_t i = 0; i < kStops; ++i) {
    struct sigaction chained {};
    chained.sa_handler = on_stop_signal;
    sigemptyset(&chained.sa_mask);
    ::sigaction(kStopSignals[i], &chained, &g_libfuse[i]);
  }
}

StopSignalWaker::~StopSignalWaker() {
  if (event_fd_ < 0) return;
  for (size_t i = 0; i < kStops; ++i) ::sigaction(kStopSignals[i], &g_libfuse[i], nullptr);
  {
    MutexLock lock(mu_);
    loop_returned_ = true;
  }
  cv_.notify_all();
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
  watcher_.join();
  g_event_fd = -1;
  ::close(event_fd_);
}

void StopSignalWaker::watch() {
  uint64_t count = 0;
  while (::read(event_fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
  MutexLock lock(mu_);
  while (!loop_returned_) {
    pthread_kill(loop_thread_, SIGUSR1);
    lock.wait_for(cv_, std::chrono::milliseconds(10), [this] {
      mu_.assert_held();
      return loop_returned_;
    });
  }
}

}  // namespace peregrine::fs
