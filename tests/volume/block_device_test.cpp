// mkfs and assembly on block devices (loop devices over temp files): the
// O_EXCL "busy" refusal, the wait for a daemon finishing its unmount, and
// rdev-based duplicate detection. Needs root and
// losetup; skips otherwise. Labelled integration (external tool, root).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "exiting_holder.h"
#include "loop_device.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_lock.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class BlockDeviceTest : public VolumeTest {
 protected:
  void SetUp() override {
    VolumeTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() != 0) GTEST_SKIP() << "needs root for loop devices";
    for (int i = 0; i < 2; ++i) {
      std::string backing = make_file("backing" + std::to_string(i), 40 * kMiB);
      std::string dev = attach_loop_device(backing);
      if (dev.empty()) GTEST_SKIP() << "losetup could not attach a loop device";
      backing_.push_back(backing);
      devices_.push_back(dev);
    }
  }
  void TearDown() override {
    detach_loop_devices(devices_);
    VolumeTest::TearDown();
  }

  std::vector<std::string> backing_;
  std::vector<std::string> devices_;
};

TEST_F(BlockDeviceTest, MkfsAndAssemblyWorkOnDevices) {
  MkfsResult r = mkfs(devices_);
  EXPECT_EQ(r.superblock.member_data_size, 39 * kMiB);
  auto vol = assemble({devices_[1], devices_[0]}, MemberFile::Mode::read_write);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_TRUE(vol->members[0].info().is_block_device);
  EXPECT_EQ(vol->members[0].info().path, devices_[0]);
  EXPECT_EQ(vol->geometry, r.superblock.geometry());
}

TEST_F(BlockDeviceTest, BusyDeviceIsRefusedAndNothingIsWritten) {
  int holder = ::open(devices_[1].c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);  // as a mount would
  ASSERT_GE(holder, 0);
  auto before = snapshot(backing_);
  MkfsOptions o;
  o.members = devices_;
  auto r = make_volume(o);
  ::close(holder);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "member " + devices_[1] + ":");
  EXPECT_MENTIONS(r.status(), "busy");
  EXPECT_TRUE(snapshot(backing_) == before);
}

// A daemon finishing its unmount (members marked exiting) keeps its
// O_EXCL claim until it exits: opening the device waits for that exit,
// says so, and then holds the device; `umount` followed at once by fsck
// or mount found it busy before.
TEST_F(BlockDeviceTest, DeviceClaimedByAnExitingDaemonIsWaitedFor) {
  Holder daemon(devices_[0], /*mark_exiting=*/true, O_EXCL);
  ASSERT_TRUE(daemon.ok());
  std::vector<std::string> told;
  LockWait wait;
  wait.on_wait = [&](const std::string& msg) {
    told.push_back(msg);
    daemon.release();  // it exits only now: the open must have waited for it
  };
  auto f = open_member_locked(devices_[0], MemberFile::Mode::read_write, wait);
  ASSERT_TRUE(f) << f.status().message();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("member " + devices_[0]), std::string::npos) << told[0];
  EXPECT_NE(told[0].find("finishing its unmount"), std::string::npos) << told[0];
  int other = ::open(devices_[0].c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
  EXPECT_LT(other, 0) << "the device is not claimed by the waiter";
  if (other >= 0) ::close(other);
}

// A claim by anything else is refused at once, as before.
TEST_F(BlockDeviceTest, DeviceClaimedByALiveHolderIsRefusedAtOnce) {
  Holder live(devices_[0], /*mark_exiting=*/false, O_EXCL);
  ASSERT_TRUE(live.ok());
  int waits = 0;
  LockWait wait;
  wait.on_wait = [&](const std::string&) { ++waits; };
  auto f = open_member_locked(devices_[0], MemberFile::Mode::read_only, wait);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().errnum(), EBUSY);
  EXPECT_MENTIONS(f.status(), "device is busy");
  EXPECT_EQ(waits, 0);
}

TEST_F(BlockDeviceTest, TheSameDeviceUnderAnotherNodeIsRefused) {
  struct stat st {};
  ASSERT_EQ(::stat(devices_[0].c_str(), &st), 0);
  std::string alias = path("alias");
  ASSERT_EQ(::mknod(alias.c_str(), S_IFBLK | 0600, st.st_rdev), 0);
  MkfsOptions o;
  o.members = {devices_[0], alias};
  auto r = make_volume(o);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "member " + alias + ": same device as member " + devices_[0]);
}

TEST_F(BlockDeviceTest, SizeOptionIsRefusedForDevices) {
  MkfsOptions o;
  o.members = devices_;
  o.size = 64 * kMiB;
  auto r = make_volume(o);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "member " + devices_[0] + ": --size applies to regular files");
}

}  // namespace
}  // namespace peregrine::test
