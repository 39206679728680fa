// What a first user of the `peregrine` command meets: a pid file that goes
// with the daemon.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

// The pid file names a running daemon: it goes when the daemon exits cleanly.
TEST(PeregrineCli, PidFileIsRemovedWhenTheDaemonExitsCleanly) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  m = v.mount();  // --pid-file DIR/daemon.pid
  ASSERT_EQ(m.code, 0) << m.describe();
  const std::string pid_file = v.dir() + "/daemon.pid";
  ASSERT_TRUE(std::filesystem::exists(pid_file));
  int status = v.unmount();  // returns once the daemon has exited
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  EXPECT_FALSE(std::filesystem::exists(pid_file)) << pid_file << " outlived the daemon";
}

TEST(PeregrineCli, PidFileOfAForegroundDaemonIsRemovedWhenItExits) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  const std::string pid_file = v.dir() + "/foreground.pid";
  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {"--pid-file", pid_file}, &lines)) << lines.seen();
  // Whenever the daemon wrote it (once ready), it must be gone once it exited.
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  EXPECT_FALSE(std::filesystem::exists(pid_file)) << pid_file << " outlived the daemon";
}

}  // namespace
}  // namespace peregrine::fstest
