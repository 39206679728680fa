// WriteOpenFiles: which inodes have a handle open for writing, and how
// many. `peregrine sync` fsyncs each of them (open_files_xattr.h), because
// only a file's fsync waits for the writebacks the kernel sent for it;
// a closed file's were waited for by its close.
//
// Thread rules: thread-safe; opened() and released() from the threads that
// answer OPEN, CREATE and RELEASE, list() from the one answering GETXATTR.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

// fi->fh of a handle open for writing, counted here, so that its release
// is uncounted whatever the flags the kernel sends with it, and so that a
// request carrying a handle says whether a writer sent it. Other handles
// carry 0.
inline constexpr uint64_t kCountedWriteHandle = 1;

class WriteOpenFiles {
 public:
  void opened(uint64_t ino) EXCLUDES(mu_);
  void released(uint64_t ino) EXCLUDES(mu_);
  // Whether `ino` has a handle open for writing.
  bool is_open(uint64_t ino) const EXCLUDES(mu_);
  // Inodes open for writing, greater than `after`, ascending.
  std::vector<uint64_t> list(uint64_t after) const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<uint64_t, uint32_t> handles_ GUARDED_BY(mu_);
};

}  // namespace peregrine::fs
