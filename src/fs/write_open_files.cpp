#include "write_open_files.h"

namespace peregrine::fs {

void WriteOpenFiles::opened(uint64_t ino) {
  MutexLock lock(mu_);
  ++handles_[ino];
}

void WriteOpenFiles::released(uint64_t ino) {
  MutexLock lock(mu_);
  auto it = handles_.find(ino);
  if (it != handles_.end() && --it->second == 0) handles_.erase(it);
}

bool WriteOpenFiles::is_open(uint64_t ino) const {
  MutexLock lock(mu_);
  return handles_.count(ino) != 0;
}

std::vector<uint64_t> WriteOpenFiles::list(uint64_t after) const {
  MutexLock lock(mu_);
  std::vector<uint64_t> out;
  for (auto it = handles_.upper_bound(after); it != handles_.end(); ++it) out.push_back(it->first);
  return out;
}

}  // namespace peregrine::fs
