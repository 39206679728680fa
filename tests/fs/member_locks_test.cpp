// When the daemon has exited, its member locks are gone: a script may mount
// the volume again at once (e.g. `peregrine mount` right after waiting for
// the old daemon). Checked with a non-blocking flock right after the pidfd
// says the daemon exited.
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <fcntl.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using MemberLocksTest = MountedTest;

TEST_F(MemberLocksTest, LocksAreReleasedWhenTheDaemonHasExited) {
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(write_file(at("f"), pattern(5 << 20, round)));
    pid_t pid = volume_->daemon_pid();
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = wait_exit(pid);
    volume_->adopt(0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    for (const std::string& m : volume_->members()) {
      Fd fd(::open(m.c_str(), O_RDONLY));
      EXPECT_EQ(::flock(fd.get(), LOCK_EX | LOCK_NB), 0) << m << " still locked after the daemon exited (round "
                                                         << round << ")";
    }
    volume_->wait_members_released();
    RunResult r = volume_->mount();
    ASSERT_EQ(r.code, 0) << r.describe();
  }
}

}  // namespace
}  // namespace peregrine::fstest
