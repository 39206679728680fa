// `peregrine grow --add` as a user runs it, on file members (and a loop
// device) in a temporary directory: files written through a real mount,
// spanning many stripes, read back byte for byte after the volume was
// restriped onto more members, which then hold part of them; df shows the
// larger volume and fsck finds nothing. A run stopped after a superblock
// copy, after a window's unsynced writes, part-way through the data, or
// killed with SIGKILL, leaves a volume that mounts unchanged (before an old
// member carries the restripe record) or refuses to mount naming the
// command to run; running it again finishes with every file intact.
// Refusals (a new member already in the volume, too small, holding a
// filesystem, the volume mounted) change nothing. Real mounts: root and
// /dev/fuse, else skipped.
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "fs_test_util.h"
#include "peregrine/volume/superblock.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

RunResult grow_add(const std::vector<std::string>& members, const std::vector<std::string>& added,
                   const std::vector<std::string>& extra = {}, const std::string& stop = "") {
  std::vector<std::string> argv = {peregrine_bin(), "grow"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  for (const std::string& a : added) argv.insert(argv.end(), {"--add", a});
  argv.insert(argv.end(), members.begin(), members.end());
  if (!stop.empty()) ::setenv("PEREGRINE_TEST_RESTRIPE_STOP_AFTER", stop.c_str(), 1);
  RunResult r = run(argv);
  ::unsetenv("PEREGRINE_TEST_RESTRIPE_STOP_AFTER");
  return r;
}

// Files through the mount: big ones over many stripes, odd sizes, a
// directory of small ones.
void write_files(const Volume& v, size_t big_bytes) {
  ASSERT_TRUE(write_file(v.at("big"), pattern(big_bytes, 1)));
  ASSERT_TRUE(write_file(v.at("odd"), pattern(3 * 1234567, 2)));
  ASSERT_EQ(::mkdir(v.at("dir").c_str(), 0755), 0);
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(write_file(v.at("dir/f" + std::to_string(i)), pattern(4096 * i + 17, 10 + i)));
}

struct Mounted {
  Tree tree;
  uint64_t bytes = 0;  // statvfs: the volume's size
};

// Mounts `members` (extra: mount options), snapshots the tree, unmounts.
Mounted mount_and_read(Volume& v, const std::vector<std::string>& members, const std::vector<std::string>& extra = {}) {
  RunResult m = v.mount(extra, members);
  EXPECT_EQ(m.code, 0) << m.describe();
  if (m.code != 0) return {};
  Mounted out;
  out.tree = snapshot_tree(v.mountpoint(), false);
  struct statvfs st {};
  EXPECT_EQ(::statvfs(v.mountpoint().c_str(), &st), 0);
  out.bytes = uint64_t{st.f_blocks} * st.f_frsize;
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  wait_members_released(members);
  return out;
}

Mounted populate(Volume& v, size_t big_bytes) {
  EXPECT_EQ(v.mkfs().code, 0);
  RunResult m = v.mount();
  EXPECT_EQ(m.code, 0) << m.describe();
  write_files(v, big_bytes);
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return mount_and_read(v, v.members());
}

void expect_fsck_clean(const std::vector<std::string>& members) {
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), members.begin(), members.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << r.describe();
}

// Bytes a sparse file member holds (its data was written, not skipped).
uint64_t allocated(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return uint64_t(st.st_blocks) * 512;
}

class GrowAdd : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(GrowAdd, EveryFileReadsBackAndTheVolumeIsLarger) {
  const int added = GetParam();
  Volume v(2, "128M");
  const Mounted before = populate(v, 96 << 20);
  std::vector<std::string> news;
  for (int i = 0; i < added; ++i) news.push_back(v.dir() + "/new" + std::to_string(i));  // created by grow
  RunResult r = grow_add(v.members(), news);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "members:          2 -> " + std::to_string(2 + added))) << r.out;
  EXPECT_TRUE(contains(r.err, "grow --add: restripe 100%")) << r.err;
  const auto all = plus(v.members(), news);
  const Mounted after = mount_and_read(v, all);
  EXPECT_EQ(describe_tree_difference(before.tree, after.tree), "");
  EXPECT_EQ(after.bytes / (1 << 20), before.bytes / (1 << 20) * (2 + added) / 2 + 8 * added)
      << "the data area grows by the added members' share (the metadata area keeps its size)";
  for (const std::string& n : news) EXPECT_GT(allocated(n), 24u << 20) << n << " holds part of the files";
  expect_fsck_clean(all);
  // Once done, the same command changes nothing.
  r = grow_add(v.members(), news);
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "nothing to do")) << r.out;
  EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, all).tree), "");
}

INSTANTIATE_TEST_SUITE_P(Added, GrowAdd, ::testing::Values(1, 2));

// Stopped at a test hook point, then run again.
class GrowAddInterrupted : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(GrowAddInterrupted, MountsAsBeforeOrRefusesAndARerunFinishes) {
  Volume v(2, "96M");
  const Mounted before = populate(v, 64 << 20);
  const std::vector<std::string> news = {v.dir() + "/new0", v.dir() + "/new1"};
  const auto all = plus(v.members(), news);
  RunResult r = grow_add(v.members(), news, {}, GetParam());
  ASSERT_EQ(r.code, 9) << "the hook stops the run: " << r.describe();
  // Up to the 4th copy only the new members' copies are written: the
  // volume is as it was.
  const bool untouched = GetParam() == "1" || GetParam() == "3";
  RunResult m = v.mount({"-o", "ro"}, v.members());
  if (untouched) {
    ASSERT_EQ(m.code, 0) << m.describe();
    EXPECT_EQ(describe_tree_difference(before.tree, snapshot_tree(v.mountpoint(), false)), "");
    EXPECT_EQ(v.unmount(), 0);
    wait_members_released(v.members());
  } else {
    EXPECT_NE(m.code, 0) << "a volume mid-restripe must not mount";
    EXPECT_TRUE(contains(m.err, "interrupted restripe") && contains(m.err, "peregrine grow --add")) << m.err;
    RunResult all_m = v.mount({"-o", "ro"}, all);
    EXPECT_NE(all_m.code, 0);
    EXPECT_TRUE(contains(all_m.err, "interrupted restripe")) << all_m.err;
    RunResult fsck = run({peregrine_bin(), "fsck", "-n", all[0], all[1], all[2], all[3]});
    EXPECT_NE(fsck.code, 0);
    EXPECT_TRUE(contains(fsck.err + fsck.out, "interrupted restripe")) << fsck.describe();
  }
  r = grow_add(v.members(), news);
  ASSERT_EQ(r.code, 0) << r.describe();
  if (!untouched) {
    EXPECT_TRUE(contains(r.out, "finished an interrupted restripe")) << r.out;
  }
  EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, all).tree), "");
  expect_fsck_clean(all);
}

INSTANTIATE_TEST_SUITE_P(Points, GrowAddInterrupted,
                         ::testing::Values("1", "3", "7", "12", "40", "written:1", "written:4", "written:9", "copy:30",
                                           "copy:80"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == ':') c = '_';
                           return "at_" + n;
                         });

// kill -9 while the data moves (once its first progress line is out).
TEST(GrowAddKilled, DuringTheMoveThenARerunFinishes) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2, "256M");
  const Mounted before = populate(v, 200 << 20);
  const std::vector<std::string> news = {v.dir() + "/new0", v.dir() + "/new1"};
  const auto all = plus(v.members(), news);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  pid_t pid =
      spawn({peregrine_bin(), "grow", "--add", news[0], "--add", news[1], v.members()[0], v.members()[1]}, pipe_fds[1]);
  ::close(pipe_fds[1]);
  LineReader lines;
  lines.reset(pipe_fds[0]);
  std::optional<std::string> line;
  while ((line = lines.next()) && !line->starts_with("grow --add: restripe")) {
  }
  ASSERT_TRUE(line) << lines.seen();
  ::kill(pid, SIGKILL);
  int status = wait_exit(pid);
  wait_members_released(all);
  const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (killed) {
    RunResult m = v.mount({"-o", "ro"}, all);
    EXPECT_NE(m.code, 0);
    EXPECT_TRUE(contains(m.err, "interrupted restripe")) << m.err;
  }
  RunResult r = grow_add(v.members(), news);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, all).tree), "");
  expect_fsck_clean(all);
}

// The commit's last write is an old member's backup superblock copy: a
// power cut that tears it leaves a volume that mounts (the primary is
// whole) with that copy damaged. The rerun finds the restripe done and
// finishes the commit by restoring the copy, so fsck finds nothing.
TEST(GrowAddTornLastCopy, TheRerunRestoresItAndSaysSo) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2, "64M");
  const Mounted before = populate(v, 8 << 20);
  const std::vector<std::string> news = {v.dir() + "/new0"};
  const auto all = plus(v.members(), news);
  ASSERT_EQ(grow_add(v.members(), news).code, 0);
  {
    const int fd = ::open(v.members()[1].c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "torn", 4, kBackupSuperblockOffset + 100), 4);
    ::close(fd);
  }
  RunResult r = grow_add(v.members(), news);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "nothing to do")) << r.out;
  EXPECT_TRUE(contains(r.err, "member " + v.members()[1] + ": backup superblock restored from the primary")) << r.err;
  expect_fsck_clean(all);
  EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, all).tree), "");
}

// Power cuts inside grow --add: its member writes go through the power-cut
// layer (PEREGRINE_TEST_POWER_CUT, fs/power_cut_members.h), the command
// dies as a chosen member write or flush starts, and every write no flush
// covered is kept, lost or torn. The volume then mounts unchanged, or a
// rerun of the command finishes (with --force when the cut tore the new
// member's only superblock copy, which the refusal names), and every file
// reads back. Rounds: PEREGRINE_POWER_CUT_GROW_ROUNDS (default 8); the
// seed is printed (PEREGRINE_CRASH_SEED reproduces).
TEST(GrowAddPowerCut, power_cut_AnywhereInTheRunThenTheVolumeMountsOrARerunFinishes) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const uint64_t rounds = fstest::env_u64("PEREGRINE_POWER_CUT_GROW_ROUNDS", 8);
  Volume v(2, "64M");
  const Mounted before = populate(v, 40 << 20);
  const std::vector<std::string> news = {v.dir() + "/new0"};
  const auto all = plus(v.members(), news);
  OfflineCommandCuts cuts(v, [&] { return grow_add(v.members(), news); });
  const uint64_t total = cuts.measure_whole_run();
  ASSERT_GT(total, 20u);
  const uint64_t seed = fstest::crash_seed("grow --add power cuts", rounds);
  for (uint64_t round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    cuts.put_members_back();
    ::unlink(news[0].c_str());
    const uint64_t kill_at = 1 + fstest::mix(seed * 7919 + round) % total;
    RunResult cut = cuts.run(kill_at);
    ASSERT_EQ(cut.code, 128 + SIGKILL) << "kill_at_io=" << kill_at << " of " << total << ": " << cut.describe();
    wait_members_released(all);
    for (size_t i = 0; i < all.size(); ++i) {
      if (!std::filesystem::exists(all[i])) continue;  // cut before the new member was made
      auto out = apply_power_cut(all[i], cuts.log(static_cast<uint32_t>(i)), fstest::mix(seed + round * 31 + i));
      ASSERT_TRUE(static_cast<bool>(out)) << out.status().message();
    }
    RunResult r = grow_add(v.members(), news);
    if (r.code != 0 && contains(r.err, "damaged peregrine superblock") && contains(r.err, "--force")) {
      std::printf("kill_at_io=%llu: the rerun refused, then --force: %s", static_cast<unsigned long long>(kill_at),
                  r.err.c_str());
      r = grow_add(v.members(), news, {"--force"});
    }
    ASSERT_EQ(r.code, 0) << "kill_at_io=" << kill_at << " of " << total << ": " << r.describe();
    EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, all).tree), "") << "kill_at_io=" << kill_at;
    expect_fsck_clean(all);
    if (::testing::Test::HasFailure()) break;
  }
}

class GrowAddRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    v_.emplace(2, "64M");
    before_ = populate(*v_, 16 << 20);
    for (const std::string& m : v_->members()) hashes_.push_back(hash_file(m));
  }
  void expect_unchanged() {
    for (size_t i = 0; i < hashes_.size(); ++i) EXPECT_EQ(hash_file(v_->members()[i]), hashes_[i]) << i;
  }
  std::optional<Volume> v_;
  Mounted before_;
  std::vector<uint64_t> hashes_;
};

TEST_F(GrowAddRefusal, NewAlreadyAMember) {
  // Given as new while the other members are given: the volume has it.
  RunResult r = grow_add({v_->members()[0]}, {v_->members()[1]});
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "already has these 2 members") && contains(r.out, "nothing to do")) << r.out;
  r = grow_add(v_->members(), {v_->members()[1]});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "same file as")) << r.err;
  expect_unchanged();
}

TEST_F(GrowAddRefusal, NewTooSmall) {
  const std::string small = v_->dir() + "/small";
  ASSERT_EQ(::close(::open(small.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::truncate(small.c_str(), 16 << 20), 0);
  RunResult r = grow_add(v_->members(), {small});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + small + ": too small")) << r.err;
  EXPECT_EQ(allocated(small), 0u) << "nothing written to it";
  expect_unchanged();
}

TEST_F(GrowAddRefusal, NewWithAFilesystemNeedsForce) {
  const std::string now = v_->dir() + "/ext4";
  RunResult made = run({"mkfs.ext4", "-q", "-F", now, "80M"});
  if (made.code != 0) GTEST_SKIP() << "mkfs.ext4 unavailable: " << made.describe();
  const uint64_t ext4_hash = hash_file(now);
  RunResult r = grow_add(v_->members(), {now});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "ext4") && contains(r.err, "--force")) << r.err;
  EXPECT_EQ(hash_file(now), ext4_hash);
  expect_unchanged();
  r = grow_add(v_->members(), {now}, {"--force"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(describe_tree_difference(before_.tree, mount_and_read(*v_, plus(v_->members(), {now})).tree), "");
}

// The members of a mounted volume, or its mount point among members: the
// offline form is refused and the message names the online one
// (tests/fs/online_restripe_test.cpp runs that).
TEST_F(GrowAddRefusal, MountedVolume) {
  const std::string now = v_->dir() + "/new";
  ASSERT_EQ(v_->mount().code, 0);
  RunResult r = grow_add({v_->mountpoint(), v_->members()[0]}, {now});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "give it alone to add members to the mounted volume")) << r.err;
  r = grow_add(v_->members(), {now});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "mounted at " + v_->mountpoint()) &&
              contains(r.err, "peregrine grow --add NEW... MOUNTPOINT"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(now));
  ASSERT_EQ(v_->unmount(), 0);
}

// A loop device added to file members, read and written with O_DIRECT.
TEST(GrowAddDevice, OntoALoopDevice) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir("peregrine-growadd-dev");
  const std::string backing = dir / "backing";
  ASSERT_TRUE(write_file(backing, pattern(1 << 20, 4)));  // junk the restripe must overwrite
  ASSERT_EQ(::truncate(backing.c_str(), 96 << 20), 0);
  RunResult lo = run({"losetup", "-f", "--show", backing});
  if (lo.code != 0 || lo.out.empty()) GTEST_SKIP() << "losetup could not attach a loop device: " << lo.describe();
  const std::string device = lo.out.substr(0, lo.out.find('\n'));
  {
    Volume v(2, "96M");
    const Mounted before = populate(v, 64 << 20);
    RunResult r = grow_add(v.members(), {device});
    EXPECT_EQ(r.code, 0) << r.describe();
    if (r.code == 0) {
      EXPECT_EQ(describe_tree_difference(before.tree, mount_and_read(v, plus(v.members(), {device})).tree), "");
      expect_fsck_clean(plus(v.members(), {device}));
    }
  }
  run({"losetup", "-d", device});
}

}  // namespace
}  // namespace peregrine::fstest
