// Member locks and the "exiting" mark (member_lock.h): a member held by a
// live process is refused at once; one held by a process that marked it
// exiting is waited for (pidfd) and then locked. The holder is a forked
// child, because POSIX record locks (the mark) never conflict within one
// process. Synchronisation is by pipes: the child exits when the waiter's
// on_wait tells it to, so the waiter is really waiting when it goes.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "exiting_holder.h"
#include "peregrine/backend/member_file.h"
#include "peregrine/volume/member_lock.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

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
  EXPECT_EQ(s.message(),
            "member " + member_ + ": in use by another peregrine process (pid " + std::to_string(holder.pid()) + ")");
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
