// `peregrine grow` as a user runs it, on real mounts: a volume whose member
// files (or loop devices) became larger mounts larger after grow, its old
// files byte-identical, and a new file filling space past the old end
// reads back after a remount; fsck is clean. Refusals (nothing to grow, a
// member shrunk, a wrong member list, the members of a mounted volume)
// exit 1 naming the problem and change no member. A journal left by a killed daemon replays
// onto the grown volume. A grow stopped after every superblock copy
// (PEREGRINE_TEST_GROW_STOP_AFTER) leaves a volume that mounts at the old
// size with a warning, data intact, until grow is run again. Online
// (peregrine grow MOUNTPOINT): df shows the new size at once, the new space
// holds a file that survives a remount, and a daemon stopped after every
// superblock copy loses nothing. Root and /dev/fuse (else skipped); loop
// devices: losetup (else that test skips).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "fs_test_util.h"
#include "loop_device.h"

namespace peregrine::fstest {
namespace {

constexpr uint64_t kMiB = 1 << 20;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

uint64_t volume_bytes(const std::string& mnt) {
  struct statvfs s {};
  EXPECT_EQ(::statvfs(mnt.c_str(), &s), 0);
  return static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
}

void resize_all(const std::vector<std::string>& files, uint64_t size) {
  for (const auto& f : files) std::filesystem::resize_file(f, size);
}

class GrowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace(4, "32M");
    RunResult m = volume_->mkfs();
    ASSERT_EQ(m.code, 0) << m.describe();
    RunResult r = volume_->mount();
    ASSERT_EQ(r.code, 0) << r.describe();
    old_bytes_ = volume_bytes(volume_->mountpoint());
    ASSERT_TRUE(write_file(volume_->at("one"), pattern(5 * kMiB + 123, 1)));
    ASSERT_EQ(::mkdir(volume_->at("dir").c_str(), 0755), 0);
    ASSERT_TRUE(write_file(volume_->at("dir/two"), pattern(77777, 2)));
    unmount();
  }
  void TearDown() override { volume_.reset(); }

  void unmount() {
    int status = volume_->unmount();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  void expect_old_files() {
    EXPECT_TRUE(read_file(volume_->at("one")) == pattern(5 * kMiB + 123, 1)) << "one changed";
    EXPECT_TRUE(read_file(volume_->at("dir/two")) == pattern(77777, 2)) << "dir/two changed";
  }
  RunResult grow(const std::vector<std::string>& extra = {}, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(peregrine_bin());
    argv.push_back("grow");
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
    return run(argv);
  }
  RunResult fsck_n() {
    std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
    argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
    return run(argv);
  }
  std::vector<uint64_t> hashes() const { return hash_files(volume_->members()); }
  void expect_refused(const RunResult& r, const std::string& thing, const std::vector<uint64_t>& before) {
    fstest::expect_refused(r, thing, volume_->members(), before);
  }

  std::optional<Volume> volume_;
  uint64_t old_bytes_ = 0;
};

TEST_F(GrowCli, GrownVolumeMountsLargerWithOldFilesIntactAndNewSpaceUsable) {
  resize_all(volume_->members(), 64 * kMiB);
  RunResult g = grow();
  ASSERT_EQ(g.code, 0) << g.describe();
  EXPECT_TRUE(contains(g.out, "member data size: 31 MiB -> 63 MiB")) << g.out;
  EXPECT_TRUE(contains(g.out, "volume size:      124 MiB -> 252 MiB")) << g.out;

  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_ + 4 * 32 * kMiB);
  expect_old_files();
  // More than the whole old data area: it must use the new space.
  const size_t big = old_bytes_ + 16 * kMiB;
  ASSERT_TRUE(write_file(volume_->at("big"), pattern(big, 3)));
  unmount();
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_TRUE(read_file(volume_->at("big")) == pattern(big, 3)) << "the file past the old end reads back different";
  expect_old_files();
  unmount();
}

TEST_F(GrowCli, SizeOptionExtendsTheFileMembers) {
  RunResult g = grow({"--size", "48M"});
  ASSERT_EQ(g.code, 0) << g.describe();
  EXPECT_TRUE(contains(g.out, "member data size: 31 MiB -> 47 MiB")) << g.out;
  for (const auto& m : volume_->members()) EXPECT_EQ(std::filesystem::file_size(m), 48 * kMiB) << m;
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_ + 4 * 16 * kMiB);
  expect_old_files();
  unmount();
}

TEST_F(GrowCli, NothingToGrowIsRefused) {
  auto before = hashes();
  expect_refused(grow(), "nothing to grow: the members already use all their space (31 MiB per member", before);
}

TEST_F(GrowCli, AShrunkMemberIsRefused) {
  resize_all(volume_->members(), 64 * kMiB);
  std::filesystem::resize_file(volume_->members()[2], 30 * kMiB);
  auto before = hashes();
  expect_refused(grow(), "member " + volume_->members()[2] + ": smaller than its recorded size", before);
}

TEST_F(GrowCli, AWrongMemberListIsRefused) {
  resize_all(volume_->members(), 64 * kMiB);
  auto before = hashes();
  std::vector<std::string> three(volume_->members().begin(), volume_->members().begin() + 3);
  std::vector<std::string> argv = {peregrine_bin(), "grow"};
  argv.insert(argv.end(), three.begin(), three.end());
  expect_refused(run(argv), "1 of 4 members missing", before);

  Volume other(2, "32M");
  ASSERT_EQ(other.mkfs().code, 0);
  argv.push_back(other.members()[0]);
  expect_refused(run(argv), "belongs to another volume", before);
}

TEST_F(GrowCli, TheMembersOfAMountedVolumeAreRefusedNamingTheMount) {
  resize_all(volume_->members(), 64 * kMiB);
  ASSERT_EQ(volume_->mount().code, 0);
  auto before = hashes();
  RunResult r = grow();
  expect_refused(r, "mounted at " + volume_->mountpoint(), before);
  EXPECT_TRUE(contains(r.err, "a mounted volume grows by its mount point")) << r.err;
  std::vector<std::string> argv = {peregrine_bin(), "grow", volume_->mountpoint(), volume_->members()[0]};
  r = run(argv);
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "give it alone")) << r.err;
  EXPECT_EQ(hashes(), before);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_);
  unmount();
}

// A daemon killed with changes only in the journal: grow does not need a
// clean volume, and the next mount replays the journal onto the larger
// data area.
TEST_F(GrowCli, ADirtyJournalReplaysAfterGrow) {
  ASSERT_EQ(volume_->mount().code, 0);
  {
    Fd fd(::open(volume_->at("journaled").c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(write_at(fd.get(), pattern(3 * kMiB, 4), 0));
    ASSERT_EQ(::fsync(fd.get()), 0);
  }
  volume_->kill9();
  resize_all(volume_->members(), 64 * kMiB);
  RunResult g = grow();
  ASSERT_EQ(g.code, 0) << g.describe();
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_ + 4 * 32 * kMiB);
  EXPECT_TRUE(read_file(volume_->at("journaled")) == pattern(3 * kMiB, 4));
  expect_old_files();
  unmount();
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

// ---- online: peregrine grow MOUNTPOINT ----------------------------------------

TEST_F(GrowCli, OnlineTheMountedVolumeGrowsAtOnce) {
  ASSERT_EQ(volume_->mount().code, 0);
  resize_all(volume_->members(), 64 * kMiB);
  RunResult g = run({peregrine_bin(), "grow", volume_->mountpoint()});
  ASSERT_EQ(g.code, 0) << g.describe();
  EXPECT_TRUE(contains(g.out, "(online)")) << g.out;
  EXPECT_TRUE(contains(g.out, "member data size: 31 MiB -> 63 MiB")) << g.out;
  // Without a remount.
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_ + 4 * 32 * kMiB);
  expect_old_files();
  const size_t big = old_bytes_ + 16 * kMiB;
  ASSERT_TRUE(write_file(volume_->at("big"), pattern(big, 5)));
  EXPECT_TRUE(read_file(volume_->at("big")) == pattern(big, 5));
  unmount();
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_ + 4 * 32 * kMiB);
  EXPECT_TRUE(read_file(volume_->at("big")) == pattern(big, 5)) << "the file past the old end changed";
  expect_old_files();
  unmount();
}

TEST_F(GrowCli, OnlineRefusalsSayWhy) {
  ASSERT_EQ(volume_->mount().code, 0);
  auto before = hashes();
  RunResult r = run({peregrine_bin(), "grow", volume_->mountpoint()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "nothing to grow")) << r.err;
  r = run({peregrine_bin(), "grow", "--size", "64M", volume_->mountpoint()});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--size needs the members")) << r.err;
  r = grow();  // the members of the mounted volume
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "peregrine grow MOUNTPOINT")) << r.err;
  EXPECT_EQ(hashes(), before);
  unmount();

  resize_all(volume_->members(), 64 * kMiB);
  ASSERT_EQ(volume_->mount({"-o", "ro"}).code, 0);
  r = run({peregrine_bin(), "grow", volume_->mountpoint()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "mounted read-only")) << r.err;
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), old_bytes_);
  unmount();
}

// The daemon stopped (_exit) after superblock copy k of an online grow:
// the volume mounts at the old size (or, after the last copy, the new one)
// with its files, and an offline grow finishes.
TEST_F(GrowCli, OnlineAStopAfterEveryStepLosesNothing) {
  uint64_t member = 32 * kMiB;
  uint64_t bytes = old_bytes_;
  for (int k = 1; k <= 8; ++k) {
    SCOPED_TRACE("daemon stopped after superblock copy " + std::to_string(k));
    // The daemon inherits the hook from this process's environment.
    ASSERT_EQ(::setenv("PEREGRINE_TEST_GROW_STOP_AFTER", std::to_string(k).c_str(), 1), 0);
    RunResult m = volume_->mount();
    ::unsetenv("PEREGRINE_TEST_GROW_STOP_AFTER");
    ASSERT_EQ(m.code, 0) << m.describe();
    member += 8 * kMiB;
    resize_all(volume_->members(), member);
    RunResult g = run({peregrine_bin(), "grow", volume_->mountpoint()});
    EXPECT_EQ(g.code, 1) << g.describe();
    const pid_t pid = volume_->daemon_pid();
    int status = wait_exit(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9) << status;
    volume_->adopt(0);
    run({"umount", "-l", volume_->mountpoint()});
    volume_->wait_members_released();

    m = volume_->mount();
    ASSERT_EQ(m.code, 0) << m.describe();
    if (k < 8) {
      EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
      EXPECT_TRUE(contains(m.err, "an interrupted 'peregrine grow'")) << m.err;
    } else {
      bytes += 4 * 8 * kMiB;
      EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
    }
    expect_old_files();
    unmount();
    if (k == 8) break;
    RunResult again = grow();
    ASSERT_EQ(again.code, 0) << again.describe();
    EXPECT_TRUE(contains(again.out, "finished an interrupted grow")) << again.out;
    bytes += 4 * 8 * kMiB;
  }
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
  expect_old_files();
  unmount();
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

TEST(GrowHelp, NamesTheOptionAndTheCommandIsListed) {
  RunResult r = run({peregrine_bin(), "grow", "--help"});
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "usage: peregrine grow [--size SIZE] MEMBER...")) << r.out;
  EXPECT_TRUE(contains(r.out, "peregrine grow MOUNTPOINT")) << r.out;
  EXPECT_TRUE(contains(r.out, "--size SIZE")) << r.out;
  EXPECT_FALSE(contains(r.out, " arg ") || contains(r.out, " arg\n")) << r.out;
  r = run({peregrine_bin(), "--help"});
  EXPECT_TRUE(contains(r.out, "\n  grow ")) << r.out;
  r = run({peregrine_bin(), "grow"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(r.err.starts_with("peregrine grow: no members given")) << r.err;
}

// Each round grows the members by another 8 MiB and stops grow after
// superblock copy k (8 copies: 4 members, primary and backup): the volume
// mounts at the size before, says a grow was interrupted, keeps its files;
// grow again finishes, and the volume mounts at the new size.
TEST_F(GrowCli, AStopAfterEveryStepMountsAtTheOldSizeUntilGrowIsRunAgain) {
  uint64_t member = 32 * kMiB;
  uint64_t bytes = old_bytes_;
  for (int k = 1; k <= 8; ++k) {
    SCOPED_TRACE("stopped after superblock copy " + std::to_string(k));
    member += 8 * kMiB;
    resize_all(volume_->members(), member);
    RunResult stopped = grow({}, {"PEREGRINE_TEST_GROW_STOP_AFTER=" + std::to_string(k)});
    ASSERT_EQ(stopped.code, 9) << stopped.describe();

    RunResult m = volume_->mount();
    ASSERT_EQ(m.code, 0) << m.describe();
    if (k < 8) {
      EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
      EXPECT_TRUE(contains(m.err, "an interrupted 'peregrine grow'")) << m.err;
    } else {
      bytes += 4 * 8 * kMiB;  // the last copy written: the grow is complete
      EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
      EXPECT_FALSE(contains(m.err, "interrupted")) << m.err;
    }
    expect_old_files();
    unmount();
    if (k == 8) break;
    RunResult f = fsck_n();
    EXPECT_EQ(f.code, 0) << f.describe();
    EXPECT_TRUE(contains(f.out, "note: an interrupted 'peregrine grow'")) << f.out;

    RunResult again = grow();
    ASSERT_EQ(again.code, 0) << again.describe();
    EXPECT_TRUE(contains(again.out, "finished an interrupted grow")) << again.out;
    bytes += 4 * 8 * kMiB;
    ASSERT_EQ(volume_->mount().code, 0);
    EXPECT_EQ(volume_bytes(volume_->mountpoint()), bytes);
    expect_old_files();
    unmount();
  }
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

// Loop devices over files: the backing files grow, `losetup -c` tells the
// kernel, and grow reads the new device size.
class GrowLoopDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace(2, "32M");  // its temp dir and mount point; the members are loop devices
  }
  void TearDown() override {
    if (volume_ && volume_->mounted()) volume_->unmount();
    test::detach_loop_devices(devices_);
    volume_.reset();
  }

  // Volume::unmount waits for its member files only: wait (flock, a real
  // wait on the kernel) until the daemon's last reference to each device
  // is gone, so grow's O_EXCL open is not refused as busy.
  void unmount() {
    int status = volume_->unmount();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    for (const auto& d : devices_) {
      Fd fd(::open(d.c_str(), O_RDONLY));
      ASSERT_TRUE(fd.ok()) << d;
      EXPECT_EQ(::flock(fd.get(), LOCK_EX), 0) << d;
    }
  }

  std::optional<Volume> volume_;
  std::vector<std::string> backing_, devices_;
};

TEST_F(GrowLoopDevices, GrownDevicesMountLarger) {
  for (int i = 0; i < 2; ++i) {
    std::string backing = volume_->dir() + "/backing" + std::to_string(i);
    std::FILE* f = std::fopen(backing.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    std::filesystem::resize_file(backing, 48 * kMiB);
    std::string dev = test::attach_loop_device(backing);
    if (dev.empty()) GTEST_SKIP() << "losetup could not attach a loop device";
    backing_.push_back(backing);
    devices_.push_back(dev);
  }
  std::vector<std::string> argv = {peregrine_bin(), "mkfs"};
  argv.insert(argv.end(), devices_.begin(), devices_.end());
  RunResult m = run(argv);
  ASSERT_EQ(m.code, 0) << m.describe();
  ASSERT_EQ(volume_->mount({}, devices_).code, 0);
  const uint64_t before = volume_bytes(volume_->mountpoint());
  ASSERT_TRUE(write_file(volume_->at("kept"), pattern(3 * kMiB, 9)));
  unmount();

  for (size_t i = 0; i < devices_.size(); ++i) {
    std::filesystem::resize_file(backing_[i], 80 * kMiB);
    ASSERT_EQ(run({"losetup", "-c", devices_[i]}).code, 0);
  }
  argv = {peregrine_bin(), "grow"};
  argv.insert(argv.end(), devices_.begin(), devices_.end());
  RunResult g = run(argv);
  ASSERT_EQ(g.code, 0) << g.describe();
  EXPECT_TRUE(contains(g.out, "member data size: 47 MiB -> 79 MiB")) << g.out;
  argv = {peregrine_bin(), "grow", "--size", "1G"};
  argv.insert(argv.end(), devices_.begin(), devices_.end());
  RunResult sized = run(argv);
  EXPECT_EQ(sized.code, 1) << sized.describe();
  EXPECT_TRUE(contains(sized.err, "--size applies to regular files")) << sized.err;

  ASSERT_EQ(volume_->mount({}, devices_).code, 0);
  EXPECT_EQ(volume_bytes(volume_->mountpoint()), before + 2 * 32 * kMiB);
  EXPECT_TRUE(read_file(volume_->at("kept")) == pattern(3 * kMiB, 9));
  const size_t big = before + 8 * kMiB;
  ASSERT_TRUE(write_file(volume_->at("big"), pattern(big, 10)));
  unmount();
  ASSERT_EQ(volume_->mount({}, devices_).code, 0);
  EXPECT_TRUE(read_file(volume_->at("big")) == pattern(big, 10));
  unmount();
}

}  // namespace
}  // namespace peregrine::fstest
