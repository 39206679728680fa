// Type=notify: in the foreground with $NOTIFY_SOCKET set (as systemd runs
// peregrine@.service), the daemon sends READY=1 only once the filesystem
// serves, STOPPING=1 when the unmount begins, and a failed start sends its
// reason as STATUS= and never READY=1. The test plays systemd's part with
// its own datagram socket.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = Fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    bound_ = fd_.ok() && ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  bool ok() const { return bound_; }
  std::string env() const { return "NOTIFY_SOCKET=" + path_; }
  // The next message; "" if none arrives within the guard.
  std::string next(int guard_s = 60) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, guard_s * 1000) <= 0) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  Fd fd_;
  bool bound_ = false;
};

// A fresh volume (not mounted) and a notify socket in its directory.
class SystemdNotify : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace();
    ASSERT_EQ(volume_->mkfs().code, 0);
    sock_.emplace(volume_->dir() + "/notify");
    ASSERT_TRUE(sock_->ok()) << std::strerror(errno);
  }

  std::optional<Volume> volume_;
  std::optional<NotifySocket> sock_;
};

TEST_F(SystemdNotify, ReadyOnceServingAndStoppingAtUnmount) {
  Volume& v = *volume_;
  NotifySocket& sock = *sock_;
  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {}, &lines, {sock.env()})) << lines.seen();
  std::string ready = sock.next();
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("STATUS=serving " + v.mountpoint()), std::string::npos) << ready;
  // What READY=1 promises: the mount is there and takes IO.
  auto m = mount_at(v.mountpoint());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->fstype, "fuse.peregrine");
  std::string data = pattern(1 << 20, 9);
  ASSERT_TRUE(write_file(v.at("f"), data));
  EXPECT_EQ(read_file(v.at("f")), data);

  EXPECT_EQ(v.unmount(), 0);
  std::string stopping = sock.next();
  EXPECT_NE(stopping.find("STOPPING=1"), std::string::npos) << stopping;
}

TEST_F(SystemdNotify, FailedStartSendsItsReasonAndNeverReady) {
  Volume& v = *volume_;
  NotifySocket& sock = *sock_;
  // Three of the four members: assembly must refuse.
  int err_pipe[2];
  ASSERT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  pid_t pid = spawn({peregrine_bin(), "mount", "--foreground", v.members()[0], v.members()[1], v.members()[2],
                     v.mountpoint()},
                    err_pipe[1], {sock.env()});
  ::close(err_pipe[1]);
  LineReader lines;
  lines.reset(err_pipe[0]);
  ASSERT_GT(pid, 0);
  int status = wait_exit(pid);
  while (lines.next()) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << "\n" << lines.seen();
  std::string msg = sock.next(5);
  EXPECT_NE(msg.find("STATUS=failed: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find("READY=1"), std::string::npos) << msg;
  EXPECT_FALSE(mount_at(v.mountpoint()));
}

}  // namespace
}  // namespace peregrine::fstest
