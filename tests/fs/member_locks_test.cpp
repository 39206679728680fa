// When the daemon has exited, its member locks are gone: a script may mount
// the volume again at once (e.g. `peregrine mount` right after waiting for
// the old daemon). Checked with a non-blocking flock right after the pidfd
// says the daemon exited.
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <fcntl.h>

#include <cstring>

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
      EXPECT_EQ(::flock(fd.get(), LOCK_EX | LOCK_NB), 0)
          << m << " still locked after the daemon exited (round " << round << ")";
    }
    volume_->wait_members_released();
    RunResult r = volume_->mount();
    ASSERT_EQ(r.code, 0) << r.describe();
  }
}

// A plain `umount` returns as soon as the kernel lets go; the daemon lets
// go of the members only once it has noticed, checkpointed and exited. A
// mount right after must wait for it, not refuse the members as in use
// (xfstests generic/393, 588). Made deterministic by stopping the old
// daemon first: the new mount says it waits, and only then does the old
// daemon run on; the new mount then serves the same data.
TEST_F(MemberLocksTest, AMountRightAfterUmountWaitsForTheOldDaemon) {
  ASSERT_TRUE(write_file(at("f"), "before the umount"));
  const pid_t old = volume_->daemon_pid();
  ASSERT_EQ(::kill(old, SIGSTOP), 0);
  struct Resume {  // the old daemon never stays stopped, whatever fails
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{old};
  ASSERT_EQ(::umount(volume_->mountpoint().c_str()), 0) << std::strerror(errno);
  volume_->adopt(0);

  int err_pipe[2];
  ASSERT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  std::vector<std::string> argv = {peregrine_bin(), "mount", "--foreground"};
  argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
  argv.push_back(volume_->mountpoint());
  const pid_t again = spawn(argv, err_pipe[1]);
  ::close(err_pipe[1]);
  LineReader lines;
  lines.reset(err_pipe[0]);
  ASSERT_NE(again, 0);
  volume_->adopt(again);
  bool waiting = false;
  while (auto line = lines.next()) {
    if (line->find("waiting") != std::string::npos) {
      waiting = true;
      EXPECT_NE(line->find("pid " + std::to_string(old)), std::string::npos) << *line;
      EXPECT_NE(line->find("mount at " + volume_->mountpoint() + " is gone"), std::string::npos) << *line;
      break;
    }
  }
  ASSERT_TRUE(waiting) << "the new mount did not wait for the old daemon:\n" << lines.seen();
  ASSERT_EQ(::kill(old, SIGCONT), 0);
  bool mounted = false;
  while (auto line = lines.next()) {
    if (line->find("mounted 4 members") != std::string::npos) {
      mounted = true;
      break;
    }
  }
  ASSERT_TRUE(mounted) << lines.seen();
  int status = wait_exit(old);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "old daemon: " << status;
  EXPECT_EQ(read_file(at("f")), "before the umount");
  // While its stderr is still read: the daemon logs as it unmounts.
  status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "new daemon: " << status;
}

// While the old daemon still serves its mount, a second mount of the same
// members elsewhere is refused at once, saying where the volume is mounted.
TEST_F(MemberLocksTest, AMountOfAMountedVolumeSaysWhereItIsMounted) {
  const std::string elsewhere = volume_->dir() + "/mnt2";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0755), 0);
  std::vector<std::string> argv = {peregrine_bin(), "mount"};
  argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
  argv.push_back(elsewhere);
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("its volume is mounted at " + volume_->mountpoint()), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("pid " + std::to_string(volume_->daemon_pid())), std::string::npos) << r.describe();
  EXPECT_FALSE(mount_at(elsewhere));
}

}  // namespace
}  // namespace peregrine::fstest
