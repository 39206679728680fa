// Mount-time assembly through `peregrine mount`: members in any order mount
// the same volume; bad input (a missing member, a member of another volume,
// both superblocks of a member corrupt, a missing mount point, a volume that
// is already mounted) fails with exit 1 and a message naming the thing, and
// leaves every member byte-identical and nothing mounted. A damaged primary
// superblock (backup intact) mounts with a warning naming the member, is a
// problem for fsck -n, and is restored from the backup by fsck.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class AssemblyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace();
    RunResult m = volume_->mkfs();
    ASSERT_EQ(m.code, 0) << m.describe();
    // Some data, so "the same volume" and "untouched" mean something.
    RunResult r = volume_->mount();
    ASSERT_EQ(r.code, 0) << r.describe();
    ASSERT_TRUE(write_file(volume_->at("file"), pattern(3 << 20, 5)));
    int status = volume_->unmount();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  void TearDown() override { volume_.reset(); }

  std::vector<uint64_t> hashes() const { return hash_files(volume_->members()); }
  // A refused mount: exit 1, stderr names `thing`, nothing mounted, members untouched.
  void expect_refused(const RunResult& r, const std::string& thing, const std::vector<uint64_t>& before) {
    fstest::expect_refused(r, thing, volume_->members(), before);
    EXPECT_FALSE(mount_at(volume_->mountpoint())) << "something is mounted after a refusal";
    EXPECT_EQ(volume_->member_holder(), 0) << "a process still holds member 0";
  }

  std::optional<Volume> volume_;
};

TEST_F(AssemblyTest, MembersInAnyOrderMountTheSameVolume) {
  std::vector<std::string> order = volume_->members();
  std::reverse(order.begin(), order.end());
  std::swap(order[1], order[2]);
  RunResult r = volume_->mount({}, order);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(volume_->at("file")) == pattern(3 << 20, 5));
  // And writes made under this order read back under the original one.
  ASSERT_TRUE(write_file(volume_->at("second"), pattern(1 << 20, 6)));
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(volume_->at("second")) == pattern(1 << 20, 6));
  EXPECT_TRUE(read_file(volume_->at("file")) == pattern(3 << 20, 5));
}

TEST_F(AssemblyTest, MissingMemberIsRefused) {
  auto before = hashes();
  std::vector<std::string> three(volume_->members().begin(), volume_->members().begin() + 3);
  RunResult r = volume_->mount({}, three);
  expect_refused(r, "missing", before);
}

TEST_F(AssemblyTest, NonexistentMemberPathIsRefused) {
  auto before = hashes();
  std::vector<std::string> members = volume_->members();
  members[2] = volume_->dir() + "/no-such-member";
  RunResult r = volume_->mount({}, members);
  expect_refused(r, members[2], before);
}

TEST_F(AssemblyTest, MemberOfAnotherVolumeIsRefused) {
  Volume other(1, "64M");
  ASSERT_EQ(other.mkfs().code, 0);
  auto before = hashes();
  uint64_t other_before = hash_file(other.members()[0]);
  std::vector<std::string> members = volume_->members();
  members.push_back(other.members()[0]);
  RunResult r = volume_->mount({}, members);
  expect_refused(r, other.members()[0], before);
  EXPECT_EQ(hash_file(other.members()[0]), other_before);
  // Replacing a member by the foreign one is refused too.
  members.pop_back();
  members[3] = other.members()[0];
  r = volume_->mount({}, members);
  expect_refused(r, other.members()[0], before);
}

TEST_F(AssemblyTest, CorruptSuperblocksAreRefused) {
  // Both copies (offset 0 and 512 KiB, docs/format.md) of member 2, flipped
  // past the magic so the checksum is what catches it.
  const std::string& m2 = volume_->members()[2];
  {
    Fd fd(::open(m2.c_str(), O_WRONLY));
    ASSERT_TRUE(fd.ok());
    for (off_t base : {off_t{0}, off_t{512 << 10}}) ASSERT_TRUE(write_at(fd.get(), std::string(16, '\x5a'), base + 40));
    ASSERT_EQ(::fsync(fd.get()), 0);
  }
  auto before = hashes();
  RunResult r = volume_->mount();
  expect_refused(r, m2, before);
}

// The reporter's damage: `dd if=/dev/urandom of=MEMBER bs=64K count=1
// conv=notrunc` over member 1, whose backup (at 512 KiB) is intact.
TEST_F(AssemblyTest, DamagedPrimarySuperblockIsWarnedCountedAndRestored) {
  const std::string& m1 = volume_->members()[1];
  const std::string backup = [&] {
    Fd fd(::open(m1.c_str(), O_RDONLY));
    return read_at(fd.get(), 4096, 512 << 10);
  }();
  ASSERT_EQ(backup.size(), 4096u);
  {
    Fd fd(::open(m1.c_str(), O_WRONLY));
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(write_at(fd.get(), pattern(64 << 10, 77), 0));
    ASSERT_EQ(::fsync(fd.get()), 0);
  }
  auto primary_of_m1 = [&] {
    Fd fd(::open(m1.c_str(), O_RDONLY));
    return read_at(fd.get(), 4096, 0);
  };
  const std::string warning = "member " + m1 + ": primary superblock corrupt";

  // A background mount serves from the backup and says so where it ran.
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(volume_->at("file")) == pattern(3 << 20, 5));
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // So does the daemon's log (here the foreground's stderr).
  {
    LineReader lines;
    ASSERT_TRUE(mount_foreground(*volume_, {}, &lines)) << lines.seen();
    EXPECT_NE(lines.seen().find(warning), std::string::npos) << lines.seen();
    status = volume_->unmount();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  // fsck -n: one problem, exit 4 (errors left uncorrected), nothing written.
  auto before = hashes();
  std::vector<std::string> check = {peregrine_bin(), "fsck", "-n"};
  check.insert(check.end(), volume_->members().begin(), volume_->members().end());
  RunResult n = run(check);
  EXPECT_EQ(n.code, 4) << n.describe();
  EXPECT_NE(n.out.find(warning), std::string::npos) << n.describe();
  EXPECT_NE(n.out.find("1 problem(s) found, 0 repaired"), std::string::npos) << n.describe();
  EXPECT_EQ(hashes(), before) << "fsck -n wrote to the members";

  // fsck: restores the primary from the backup (exit 1, corrected) ...
  std::vector<std::string> repair = {peregrine_bin(), "fsck"};
  repair.insert(repair.end(), volume_->members().begin(), volume_->members().end());
  RunResult y = run(repair);
  EXPECT_EQ(y.code, 1) << y.describe();
  EXPECT_NE(y.out.find("member " + m1 + ": primary superblock restored from the backup"), std::string::npos)
      << y.describe();
  EXPECT_NE(y.out.find("1 problem(s) found, 1 repaired"), std::string::npos) << y.describe();
  EXPECT_TRUE(primary_of_m1() == backup) << "the primary is not the backup's copy";
  // ... after which the volume is clean and mounts without a word.
  RunResult again = run(check);
  EXPECT_EQ(again.code, 0) << again.describe();
  EXPECT_NE(again.out.find("0 problem(s) found"), std::string::npos) << again.describe();
  r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(volume_->at("file")) == pattern(3 << 20, 5));
}

TEST_F(AssemblyTest, MissingMountpointIsRefused) {
  auto before = hashes();
  std::string pid_file = volume_->dir() + "/x.pid";
  std::string nowhere = volume_->dir() + "/no-such-dir";
  std::vector<std::string> argv = {peregrine_bin(), "mount", "--pid-file", pid_file};
  argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
  argv.push_back(nowhere);
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find(nowhere), std::string::npos) << r.err;
  EXPECT_EQ(volume_->member_holder(), 0);
  EXPECT_EQ(hashes(), before);
}

TEST_F(AssemblyTest, MountingAMountedVolumeAgainIsRefused) {
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  pid_t first = volume_->daemon_pid();
  std::string second_mnt = volume_->dir() + "/mnt2";
  ASSERT_EQ(::mkdir(second_mnt.c_str(), 0755), 0);
  std::vector<std::string> argv = {peregrine_bin(), "mount", "--pid-file", volume_->dir() + "/second.pid"};
  argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
  argv.push_back(second_mnt);
  RunResult again = run(argv);
  EXPECT_EQ(again.code, 1) << again.describe();
  EXPECT_NE(again.err.find("in use"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find(volume_->dir()), std::string::npos) << "stderr names no member: " << again.err;
  EXPECT_FALSE(mount_at(second_mnt));
  // The first mount is unharmed.
  EXPECT_EQ(volume_->member_holder(), first) << "the daemon serving the first mount";
  EXPECT_TRUE(read_file(volume_->at("file")) == pattern(3 << 20, 5));
  ASSERT_TRUE(write_file(volume_->at("more"), "still serving"));
  EXPECT_EQ(read_file(volume_->at("more")), "still serving");
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace peregrine::fstest
