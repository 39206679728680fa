#include "refused_writebacks.h"

#include <cerrno>

namespace peregrine::fs {

void RefusedWritebacks::note(uint64_t ino, int err) {
  MutexLock lk(mu_);
  errors_[ino] = err;
  count_.store(static_cast<uint32_t>(errors_.size()), std::memory_order_release);
}

int RefusedWritebacks::take(uint64_t ino) {
  if (count_.load(std::memory_order_acquire) == 0) return 0;
  MutexLock lk(mu_);
  auto it = errors_.find(ino);
  if (it == errors_.end()) return 0;
  const int err = it->second;
  errors_.erase(it);
  count_.store(static_cast<uint32_t>(errors_.size()), std::memory_order_release);
  return err;
}

void RefusedWritebacks::forget(uint64_t ino) { take(ino); }

}  // namespace peregrine::fs
