// The ways a mount ends cleanly: `fusermount3 -u` and SIGTERM to the daemon
// (umount(8) is what every other test uses). Each drains, checkpoints and
// exits 0, the mount is gone, and a remount shows the data.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using UnmountTest = MountedTest;

void remount_and_check(Volume& v, const std::string& name, const std::string& data) {
  EXPECT_FALSE(mount_at(v.mountpoint())) << "still mounted after the daemon exited";
  RunResult r = v.mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(v.at(name)) == data) << name << " lost across the unmount";
}

TEST_F(UnmountTest, FusermountUnmountsCleanly) {
  const std::string data = pattern(5 << 20, 1);
  ASSERT_TRUE(write_file(at("f"), data));  // not fsync'd: the unmount must flush it
  pid_t pid = volume_->daemon_pid();
  RunResult r = run({"fusermount3", "-u", volume_->mountpoint()});
  ASSERT_EQ(r.code, 0) << r.describe();
  int status = wait_exit(pid);
  volume_->adopt(0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  volume_->wait_members_released();
  remount_and_check(*volume_, "f", data);
}

TEST_F(UnmountTest, SigtermUnmountsCleanly) {
  const std::string data = pattern(5 << 20, 2);
  ASSERT_TRUE(write_file(at("f"), data));
  pid_t pid = volume_->daemon_pid();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = wait_exit(pid);
  volume_->adopt(0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  volume_->wait_members_released();
  remount_and_check(*volume_, "f", data);
}

}  // namespace
}  // namespace peregrine::fstest
