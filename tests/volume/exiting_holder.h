// Test helper for the member locks (member_lock.h): a forked child that
// holds a member as a daemon does, marked exiting or not. Single-threaded
// test code; the child is reaped by the destructor.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "peregrine/volume/member_lock.h"

namespace peregrine::test {

// A child process holding LOCK_EX on `path`, marked exiting or not, as a
// daemon does (`open_flags`: O_EXCL to claim a block device as a daemon
// does). It exits when its `release` pipe is written to (or closed). A
// process of its own, because POSIX record locks (the mark) never conflict
// within one process.
class Holder {
 public:
  Holder(const std::string& path, bool mark_exiting, int open_flags = 0) {
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      int fd = ::open(path.c_str(), O_RDWR | open_flags);
      bool ok = fd >= 0 && ::flock(fd, LOCK_EX) == 0 && (!mark_exiting || mark_members_exiting({path}));
      char c = ok ? 'y' : 'n';
      if (::write(ready[1], &c, 1) != 1) ::_exit(2);
      ssize_t got = ::read(release[0], &c, 1);  // returns when released (or the test dies)
      ::_exit(got >= 0 ? 0 : 1);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_ = release[1];
    char c = 0;
    ok_ = ::read(ready[0], &c, 1) == 1 && c == 'y';
    ::close(ready[0]);
  }
  ~Holder() {
    release();
    reap();
  }
  bool ok() const { return pid_ > 0 && ok_; }
  pid_t pid() const { return pid_; }
  void release() {
    if (release_ >= 0) ::close(release_);
    release_ = -1;
  }
  void reap() {
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

 private:
  pid_t pid_ = 0;
  int release_ = -1;
  bool ok_ = false;
};

}  // namespace peregrine::test
