// Member locks and the "exiting" mark (member_lock.h): a member held by a
// live process is refused at once; one held by a process that marked it
// exiting is waited for (pidfd) and then locked. The holder is a forked
// child, because POSIX record locks (the mark) never conflict within one
// process. Synchronisation is by pipes: the child exits when the waiter's
// on_wait tells it to, so the waiter is really waiting when it goes.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/volume/member_lock.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

// A child process holding LOCK_EX on `path`, marked exiting or not. It
// exits when its `release` pipe is written to (or closed).
class Holder {
 public:
  Holder(const std::string& path, bool mark_exiting) {
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      int fd = ::open(path.c_str(), O_RDWR);
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

class MemberLockTest : public VolumeTest {
 protected:
  void SetUp() override {
    VolumeTest::SetUp();
    member_ = make_file("m0", 4 << 20);
  }
  std::string member_;
};

TEST_F(MemberLockTest, LiveHolderIsRefusedAtOnce) {
  Holder holder(member_, /*mark_exiting=*/false);
  ASSERT_TRUE(holder.ok());
  auto f = MemberFile::open(member_, MemberFile::Mode::read_only);
  ASSERT_TRUE(f) << f.status().message();
  int waits = 0;
  LockWait wait;
  wait.on_wait = [&](const std::string&) { ++waits; };
  Status s = lock_member(*f, LockMode::shared, wait);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.errnum(), EBUSY);
  EXPECT_EQ(s.message(), "member " + member_ + ": in use by another peregrine process");
  EXPECT_EQ(waits, 0);
  EXPECT_EQ(exiting_holder(f->fd()), 0);
}

TEST_F(MemberLockTest, ExitingHolderIsWaitedForThenLocked) {
  Holder holder(member_, /*mark_exiting=*/true);
  ASSERT_TRUE(holder.ok());
  auto f = MemberFile::open(member_, MemberFile::Mode::read_write);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ(exiting_holder(f->fd()), holder.pid());
  std::vector<std::string> told;
  LockWait wait;
  wait.on_wait = [&](const std::string& msg) {
    told.push_back(msg);
    holder.release();  // the daemon finishes only now: the lock must wait for it
  };
  Status s = lock_member(*f, LockMode::exclusive, wait);
  EXPECT_TRUE(s) << s.message();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("member " + member_), std::string::npos) << told[0];
  EXPECT_NE(told[0].find("pid " + std::to_string(holder.pid())), std::string::npos) << told[0];
  EXPECT_NE(told[0].find("waiting"), std::string::npos) << told[0];
  // The lock is ours now: another open cannot take it.
  int other = ::open(member_.c_str(), O_RDONLY);
  ASSERT_GE(other, 0);
  EXPECT_NE(::flock(other, LOCK_SH | LOCK_NB), 0);
  ::close(other);
}

TEST_F(MemberLockTest, NoWaitingWhenTheLimitIsZero) {
  Holder holder(member_, /*mark_exiting=*/true);
  ASSERT_TRUE(holder.ok());
  auto f = MemberFile::open(member_, MemberFile::Mode::read_only);
  ASSERT_TRUE(f) << f.status().message();
  LockWait wait;
  wait.limit = std::chrono::milliseconds(0);
  Status s = lock_member(*f, LockMode::shared, wait);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.errnum(), EBUSY);
  EXPECT_NE(s.message().find("member " + member_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("exiting"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("pid " + std::to_string(holder.pid())), std::string::npos) << s.message();
}

}  // namespace
}  // namespace peregrine::test
