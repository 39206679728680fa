// Type=notify: in the foreground with $NOTIFY_SOCKET set (as systemd runs
// peregrine@.service), the daemon sends READY=1 only once the filesystem
// serves, STOPPING=1 when the unmount begins, and a failed start sends its
// reason as STATUS= and never READY=1. The test plays systemd's part with
// its own datagram socket.
//
// The same socket holds a daemon in the middle of its exit: STOPPING=1 is
// sent after the members are marked exiting (member_lock.h), and a daemon
// whose notify socket is full blocks in that send. An fsck started then
// must wait for the daemon instead of refusing the members as in use.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

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
  // Queues datagrams until the socket takes no more: the next sender blocks
  // (a blocking AF_UNIX datagram send waits for room) until drain().
  bool fill() {
    Fd sender(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    int sent = 0;
    while (::sendto(sender.get(), "FILLER=1", 8, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), sizeof a) == 8) ++sent;
    return sent > 0 && errno == EAGAIN;
  }
  // Reads every queued message (without waiting), fillers and all.
  std::string drain() {
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0) all.append(buf, static_cast<size_t>(n)) += '\n';
    return all;
  }
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
  pid_t pid =
      spawn({peregrine_bin(), "mount", "--foreground", v.members()[0], v.members()[1], v.members()[2], v.mountpoint()},
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

TEST_F(SystemdNotify, FsckStartedWhileTheDaemonIsExitingWaitsForIt) {
  Volume& v = *volume_;
  NotifySocket& sock = *sock_;
  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {}, &lines, {sock.env()})) << lines.seen();
  ASSERT_NE(sock.next().find("READY=1"), std::string::npos);
  const std::string data = pattern(1 << 20, 11);
  ASSERT_TRUE(write_file(v.at("f"), data));
  pid_t daemon = v.daemon_pid();

  // The daemon marks its members in order, opening each by path; once it
  // opens member 1, member 0 is marked. Then it blocks sending STOPPING=1.
  Fd inotify(::inotify_init1(IN_CLOEXEC));
  ASSERT_TRUE(inotify.ok());
  ASSERT_GE(::inotify_add_watch(inotify.get(), v.members()[1].c_str(), IN_OPEN), 0);
  ASSERT_TRUE(sock.fill()) << std::strerror(errno);
  ASSERT_EQ(::umount2(v.mountpoint().c_str(), 0), 0) << std::strerror(errno);  // the kernel lets go at once
  pollfd opened{inotify.get(), POLLIN, 0};  // 60 s: a guard against a hang, not a wait
  ASSERT_EQ(::poll(&opened, 1, 60000), 1) << "the daemon never opened member 1 to mark it exiting";
  char ev[sizeof(inotify_event) + 256];
  ASSERT_GT(::read(inotify.get(), ev, sizeof ev), 0);

  int err_pipe[2];
  ASSERT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  pid_t fsck = spawn(argv, err_pipe[1]);
  ::close(err_pipe[1]);
  ASSERT_GT(fsck, 0);
  LineReader fsck_err;
  fsck_err.reset(err_pipe[0]);
  std::optional<std::string> line = fsck_err.next();
  ASSERT_TRUE(line) << "fsck said nothing; it should wait for the exiting daemon";
  EXPECT_NE(line->find("member " + v.members()[0]), std::string::npos) << *line;
  EXPECT_NE(line->find("pid " + std::to_string(daemon)), std::string::npos) << *line;
  EXPECT_NE(line->find("waiting"), std::string::npos) << *line;

  // Make room: the daemon's STOPPING=1 goes through, it checkpoints and
  // exits 0, and then fsck runs.
  EXPECT_NE(sock.drain().find("FILLER=1"), std::string::npos);
  int status = wait_exit(daemon);
  v.adopt(0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  status = wait_exit(fsck);
  while (fsck_err.next()) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << fsck_err.seen();
  v.wait_members_released();
  ASSERT_EQ(v.mount().code, 0);
  EXPECT_TRUE(read_file(v.at("f")) == data);
}

}  // namespace
}  // namespace peregrine::fstest
