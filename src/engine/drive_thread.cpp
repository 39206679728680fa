#include "drive_thread.h"

#include <pthread.h>
#include <sched.h>

namespace peregrine {

Expected<std::unique_ptr<DriveThread>> DriveThread::create(std::vector<Drive*> drives, int cpu, std::string name) {
  std::unique_ptr<DriveThread> t(new DriveThread(std::move(drives), cpu, std::move(name)));
  auto waker = CompletionWaker::create();
  if (!waker) return waker.status();
  t->sleep_.waker = std::move(*waker);
  return t;
}

Status DriveThread::attach_drives() {
  for (Drive* d : drives_) {
    if (Status s = d->attach(sleep_); !s) return s;
  }
  return Status::ok();
}

DriveThread::~DriveThread() { join(); }

void DriveThread::join() {
  if (thread_.joinable()) thread_.join();
}

void DriveThread::start() {
  thread_ = std::thread([this] { run(); });
  // Named and pinned from here, so both hold once start() returns.
  pthread_setname_np(thread_.native_handle(), name_.c_str());
  if (cpu_ >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu_, &set);
    // Pinning is a performance hint: a refusal (e.g. a restricted cpuset)
    // leaves the thread where the scheduler puts it.
    pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set);
  }
}

bool DriveThread::all_finished() const {
  for (const Drive* d : drives_) {
    if (!d->finished()) return false;
  }
  return true;
}

void DriveThread::run() {
  size_t first = 0;
  const size_t n = drives_.size();
  for (;;) {
    // Each turn starts at the next drive: a drive served later in every
    // turn would see its completions reaped, and its IO dispatched, later.
    for (size_t i = 0; i < n; ++i) drives_[(first + i) % n]->run_round();
    first = (first + 1) % n;
    if (all_finished()) break;
    // Say we sleep first, then ask each drive: a submitter that queues
    // after a drive's check sees the flag and wakes us (Drive::may_sleep).
    sleep_.sleeping.store(true);
    uint64_t deadline_ns = 0;
    bool may_sleep = true;
    for (Drive* d : drives_) {
      if (!d->may_sleep(deadline_ns)) {
        may_sleep = false;
        break;
      }
    }
    if (may_sleep) sleep_.waker->sleep(deadline_ns);
    sleep_.sleeping.store(false);
  }
  for (Drive* d : drives_) d->publish_final();
}

}  // namespace peregrine
