#include "peregrine/fs/io_gates.h"

namespace peregrine::fs {

template <typename MayEnter>
void IoGates::wait(Gate& g, std::unique_lock<std::mutex>& lock, MayEnter may_enter) {
  if (may_enter()) return;
  if (before_wait_) {
    // Unlocked: handing staged IO on can block at a drive's pressure point
    // until the drive thread completes IO, and completing IO unlocks gates.
    lock.unlock();
    before_wait_();
    lock.lock();
  }
  g.cv.wait(lock, may_enter);
}

void IoGates::lock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  std::unique_lock<std::mutex> lock(g.mu);
  wait(g, lock, [&] { return !g.exclusive && g.exclusive_waiting == 0; });
  ++g.shared;
}

void IoGates::unlock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  std::lock_guard<std::mutex> lock(g.mu);
  if (--g.shared == 0 && g.exclusive_waiting != 0) g.cv.notify_all();
}

void IoGates::lock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  std::unique_lock<std::mutex> lock(g.mu);
  ++g.exclusive_waiting;
  wait(g, lock, [&] { return !g.exclusive && g.shared == 0; });
  --g.exclusive_waiting;
  g.exclusive = true;
}

void IoGates::unlock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  std::lock_guard<std::mutex> lock(g.mu);
  g.exclusive = false;
  g.cv.notify_all();
}

}  // namespace peregrine::fs
