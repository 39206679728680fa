// What `peregrine mount` says and does around other mounts, and where its
// background daemon logs: df/findmnt name the volume, a second volume is
// not stacked on a live one unless forced, a dead mount is named with the
// way to clear it, and a daemonised mount logs to syslog by default. Real
// mounts: root and /dev/fuse (else skipped).
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string uuid_of(const Volume& v) {
  std::vector<std::string> argv = {peregrine_bin(), "info"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << r.describe();
  return r.out.substr(7, 36);
}

class MountGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(MountGuard, DfAndFindmntNameTheVolumeByLabelOrUuid) {
  Volume labelled(2), plain(2);
  ASSERT_EQ(labelled.mkfs({"--label", "photos"}).code, 0);
  ASSERT_EQ(plain.mkfs().code, 0);
  const std::string plain_uuid = uuid_of(plain);  // info cannot assemble a mounted volume
  ASSERT_EQ(labelled.mount().code, 0);
  ASSERT_EQ(plain.mount().code, 0);

  auto a = mount_at(labelled.mountpoint());
  auto b = mount_at(plain.mountpoint());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->source, "peregrine:photos");
  EXPECT_EQ(a->fstype, "fuse.peregrine");
  EXPECT_EQ(b->source, "peregrine:" + plain_uuid);
  EXPECT_EQ(b->fstype, "fuse.peregrine");
  RunResult df = run({"df", "--output=source", labelled.mountpoint()});
  EXPECT_EQ(df.code, 0) << df.describe();
  EXPECT_TRUE(contains(df.out, "\nperegrine:photos\n")) << df.out;
  RunResult findmnt = run({"findmnt", "-n", "-o", "SOURCE,FSTYPE", plain.mountpoint()});
  EXPECT_EQ(findmnt.code, 0) << findmnt.describe();
  EXPECT_TRUE(contains(findmnt.out, "peregrine:" + plain_uuid + " fuse.peregrine")) << findmnt.out;

  // umount(8) (and its helper) still recognise the mounts.
  int status = labelled.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  status = plain.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(MountGuard, MountingOverALiveVolumeIsRefusedUnlessForced) {
  Volume below(2), above(2);
  ASSERT_EQ(below.mkfs({"--label", "below"}).code, 0);
  ASSERT_EQ(above.mkfs({"--label", "above"}).code, 0);
  ASSERT_EQ(below.mount().code, 0);
  ASSERT_TRUE(write_file(below.at("kept"), "still here"));

  std::string pid_file = above.dir() + "/above.pid";
  std::vector<std::string> argv = {peregrine_bin(), "mount", "--pid-file", pid_file};
  argv.insert(argv.end(), above.members().begin(), above.members().end());
  argv.push_back(below.mountpoint());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 1) << r.describe();
  if (r.code == 0) {  // stacked: take it off again, so that `below` unmounts itself
    pid_t stacked = static_cast<pid_t>(std::atoi(read_file(pid_file).c_str()));
    EXPECT_EQ(run({"umount", below.mountpoint()}).code, 0);
    if (stacked > 0) wait_exit(stacked);
    above.wait_members_released();
  }
  EXPECT_TRUE(
      contains(r.err, "mountpoint " + below.mountpoint() + ": volume below (peregrine:below) is mounted there already"))
      << r.describe();
  EXPECT_TRUE(contains(r.err, "--force")) << r.describe();
  auto m = mount_at(below.mountpoint());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "peregrine:below") << "the refused mount stacked anyway";
  EXPECT_EQ(read_file(below.at("kept")), "still here");

  // --force mounts over it; unmounting the top one shows the one below again.
  argv.insert(argv.begin() + 2, "--force");
  r = run(argv);
  ASSERT_EQ(r.code, 0) << r.describe();
  pid_t top = static_cast<pid_t>(std::atoi(read_file(pid_file).c_str()));
  ASSERT_GT(top, 0);
  m = mount_at(below.mountpoint());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->source, "peregrine:above");
  RunResult u = run({"umount", below.mountpoint()});
  EXPECT_EQ(u.code, 0) << u.describe();
  int status = wait_exit(top);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  above.wait_members_released();
  EXPECT_EQ(read_file(below.at("kept")), "still here");
}

TEST_F(MountGuard, MountOnADeadMountSaysWhatItIsAndHowToClearIt) {
  Volume v(2);
  ASSERT_EQ(v.mkfs({"--label", "crashy"}).code, 0);
  ASSERT_EQ(v.mount().code, 0);
  pid_t daemon = v.daemon_pid();
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  int status = wait_exit(daemon);
  EXPECT_TRUE(WIFSIGNALED(status)) << status;
  v.adopt(0);  // the daemon is gone; the dead mount stays until cleared
  v.wait_members_released();

  RunResult r = v.mount();
  EXPECT_EQ(r.code, 1) << r.describe();
  const std::string mnt = v.mountpoint();
  EXPECT_TRUE(contains(r.err, "mountpoint " + mnt + ": a dead peregrine mount (peregrine:crashy): its daemon is gone"))
      << r.describe();
  EXPECT_TRUE(contains(r.err, "clear it with 'umount " + mnt + "' or 'fusermount3 -u " + mnt + "'")) << r.describe();

  // Doing as told clears it, and the volume mounts again.
  RunResult u = run({"umount", mnt});
  EXPECT_EQ(u.code, 0) << u.describe();
  EXPECT_FALSE(mount_at(mnt)) << "still mounted after the advised umount";
  r = v.mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A datagram socket standing in for /dev/log (the daemon sends there only
// when PEREGRINE_TEST_SYSLOG_SOCKET names it).
class SyslogSink {
 public:
  explicit SyslogSink(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~SyslogSink() {
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool ok() const { return bound_; }
  // The next datagram, or "" after `guard_s` seconds (a guard against a
  // hang: each line is waited for as it is sent).
  std::string next(int guard_s = 60) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, guard_s * 1000) != 1) return "";
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST_F(MountGuard, ABackgroundDaemonLogsToSyslogByDefault) {
  Volume v(2);
  ASSERT_EQ(v.mkfs().code, 0);
  SyslogSink sink(v.dir() + "/log");
  ASSERT_TRUE(sink.ok()) << std::strerror(errno);
  ::setenv("PEREGRINE_TEST_SYSLOG_SOCKET", (v.dir() + "/log").c_str(), 1);
  RunResult m = v.mount();
  ::unsetenv("PEREGRINE_TEST_SYSLOG_SOCKET");
  ASSERT_EQ(m.code, 0) << m.describe();
  const std::string expected = "mounted 2 members on " + v.mountpoint();
  std::string line, seen;
  while (!(line = sink.next()).empty()) {
    seen += line + "\n";
    if (contains(line, expected)) break;
  }
  ASSERT_TRUE(contains(line, expected)) << "syslog got:\n" << seen;
  // <daemon.info>peregrine[PID]: the line, from the daemon itself.
  EXPECT_TRUE(line.starts_with("<30>peregrine[" + std::to_string(v.daemon_pid()) + "]: ")) << line;
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  while (!(line = sink.next()).empty())
    if (contains(line, "unmounted " + v.mountpoint() + " cleanly")) break;
  EXPECT_TRUE(contains(line, "unmounted " + v.mountpoint() + " cleanly")) << line;
}

TEST_F(MountGuard, AnExplicitStderrTargetInTheBackgroundIsWarnedAbout) {
  Volume v(2);
  ASSERT_EQ(v.mkfs().code, 0);
  RunResult m = v.mount({"-o", "log.target=stderr"});
  ASSERT_EQ(m.code, 0) << m.describe();
  EXPECT_TRUE(contains(m.err, "log.target = stderr in the background: the daemon's log is discarded")) << m.describe();
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace peregrine::fstest
