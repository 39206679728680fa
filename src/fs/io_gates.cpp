#include "peregrine/fs/io_gates.h"

namespace peregrine::fs {

template <typename MayEnter>
void IoGates::wait(Gate& g, MutexLock& lock, MayEnter may_enter) {
  if (may_enter()) return;
  if (before_wait_) {
    // Unlocked: handing staged IO on can block at a drive's pressure point
    // until the drive thread completes IO, and completing IO unlocks gates.
    g.mu.unlock();
    before_wait_();
    g.mu.lock();
  }
  lock.wait(g.cv, may_enter);
}

void IoGates::lock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    return !g.exclusive && g.exclusive_waiting == 0;
  });
  ++g.shared;
}

void IoGates::unlock_shared(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  if (--g.shared == 0 && g.exclusive_waiting != 0) g.cv.notify_all();
}

void IoGates::lock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  ++g.exclusive_waiting;
  wait(g, lock, [&] {
    g.mu.assert_held();  // wait() calls it with the gate's mutex held
    return !g.exclusive && g.shared == 0;
  });
  --g.exclusive_waiting;
  g.exclusive = true;
}

void IoGates::unlock_exclusive(uint64_t ino) {
  Gate& g = gate(ino);
  MutexLock lock(g.mu);
  g.exclusive = false;
  g.cv.notify_all();
}

}  // namespace peregrine::fs
