// `peregrine replace` as a user runs it, on file members in a temporary
// directory: files (with xattrs and a symlink) written through a real
// mount, the member replaced, the volume mounted with the new member in the
// old one's place and every file compared; the old member is no member any
// more. The refusals (NEW too small, already in the volume, carrying a
// filesystem, OLD not a member, the volume mounted and given by its
// members) change nothing. A run
// stopped after every step of the copy and the switch (the test hook
// PEREGRINE_TEST_REPLACE_STOP_AFTER, _exit with IO in flight) leaves a
// volume that mounts with OLD or NEW with its data, and running the command
// again finishes the replace. A sparse member stays sparse. Real mounts:
// root and /dev/fuse, else skipped.
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "fs_test_util.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Files through the mount: large ones spread over every member, small
// ones, a directory with xattrs, a symlink.
void write_files(const Volume& v, uint64_t seed, size_t big_bytes = 24 << 20) {
  ASSERT_TRUE(write_file(v.at("big-" + std::to_string(seed)), pattern(big_bytes, seed)));
  ASSERT_TRUE(write_file(v.at("odd-" + std::to_string(seed)), pattern(1234567, seed + 1)));
  const std::string dir = v.at("dir-" + std::to_string(seed));
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  for (int i = 0; i < 20; ++i) {
    std::string f = dir + "/f" + std::to_string(i);
    ASSERT_TRUE(write_file(f, pattern(4096 * i + 17, seed * 100 + i)));
    std::string value = "value-" + std::to_string(i);
    ASSERT_EQ(::setxattr(f.c_str(), "user.replace", value.data(), value.size(), 0), 0) << std::strerror(errno);
  }
  ASSERT_EQ(::symlink("dir/f3", v.at("link-" + std::to_string(seed)).c_str()), 0);
}

std::vector<std::string> with(std::vector<std::string> members, const std::string& old, const std::string& now) {
  for (std::string& m : members)
    if (m == old) m = now;
  return members;
}

RunResult replace(const std::vector<std::string>& members, const std::string& old, const std::string& now,
                  const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {peregrine_bin(), "replace"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), members.begin(), members.end());
  argv.insert(argv.end(), {"--old", old, "--new", now});
  return run(argv);
}

// The run stops (exit 9) after `step`.
RunResult replace_stopped(const std::vector<std::string>& members, const std::string& old, const std::string& now,
                          const std::string& step) {
  ::setenv("PEREGRINE_TEST_REPLACE_STOP_AFTER", step.c_str(), 1);
  RunResult r = replace(members, old, now);
  ::unsetenv("PEREGRINE_TEST_REPLACE_STOP_AFTER");
  return r;
}

RunResult info(const std::vector<std::string>& members) {
  std::vector<std::string> argv = {peregrine_bin(), "info"};
  argv.insert(argv.end(), members.begin(), members.end());
  return run(argv);
}

// Mounts `members` (extra: mount options), snapshots the tree, unmounts.
Tree tree_of(Volume& v, const std::vector<std::string>& members, const std::vector<std::string>& extra = {}) {
  RunResult m = v.mount(extra, members);
  EXPECT_EQ(m.code, 0) << m.describe();
  if (m.code != 0) return {};
  Tree t = snapshot_tree(v.mountpoint(), false);
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  wait_members_released(members);
  return t;
}

// A volume of `n` members with files written through a mount; its tree.
Tree populate(Volume& v) {
  EXPECT_EQ(v.mkfs().code, 0);
  RunResult m = v.mount();
  EXPECT_EQ(m.code, 0) << m.describe();
  write_files(v, 1);
  Tree t = snapshot_tree(v.mountpoint(), false);
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(t.size(), 20u);
  return t;
}

// Whether [offset, offset + len) of the file reads as zeros.
bool all_zero(const std::string& path, uint64_t offset, size_t len) {
  std::string b(len, '\1');
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (!fd.ok() || ::pread(fd.get(), b.data(), len, static_cast<off_t>(offset)) != static_cast<ssize_t>(len)) return false;
  return b.find_first_not_of('\0') == std::string::npos;
}

uint64_t file_hash_or_zero(const std::string& path) { return std::filesystem::exists(path) ? hash_file(path) : 0; }

class PeregrineReplace : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(PeregrineReplace, NewTakesOldsPlaceWithEveryFile) {
  Volume v(GetParam());
  const Tree before = populate(v);
  const std::string old = v.members()[1], now = v.dir() + "/new1";
  RunResult r = replace(v.members(), old, now);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "replaced member index 1 of " + std::to_string(GetParam()))) << r.out;

  const auto members = with(v.members(), old, now);
  Tree after = tree_of(v, members);
  EXPECT_EQ(describe_tree_difference(before, after), "");
  // The volume keeps working with NEW: more files, a remount, all there.
  ASSERT_EQ(v.mount({}, members).code, 0);
  write_files(v, 2, 8 << 20);
  Tree grown = snapshot_tree(v.mountpoint(), false);
  ASSERT_EQ(v.unmount(), 0);
  wait_members_released(members);
  EXPECT_EQ(describe_tree_difference(grown, tree_of(v, members)), "");

  // OLD is no member: not by itself, not in the volume.
  RunResult ex = run({peregrine_bin(), "examine", old});
  EXPECT_EQ(ex.code, 1) << ex.describe();
  EXPECT_TRUE(contains(ex.out, "not a peregrine member")) << ex.describe();
  RunResult in = info(v.members());
  EXPECT_NE(in.code, 0);
  EXPECT_TRUE(contains(in.err, "member " + old + ": not a peregrine member")) << in.describe();
  // Running the same command again says it is done, and changes nothing.
  RunResult again = replace(v.members(), old, now);
  EXPECT_EQ(again.code, 0) << again.describe();
  EXPECT_TRUE(contains(again.out, "already replaced")) << again.out;
  EXPECT_EQ(describe_tree_difference(grown, tree_of(v, members)), "");
}

INSTANTIATE_TEST_SUITE_P(Members, PeregrineReplace, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param); });

class PeregrineReplaceRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    v_.emplace(3);
    before_ = populate(*v_);
    old_ = v_->members()[2];
    old_hash_ = hash_file(old_);
  }
  // The refusal changed neither the volume nor `now`.
  void expect_unchanged(const std::string& now, uint64_t now_hash) {
    EXPECT_EQ(hash_file(old_), old_hash_);
    EXPECT_EQ(file_hash_or_zero(now), now_hash) << now;
    EXPECT_EQ(describe_tree_difference(before_, tree_of(*v_, v_->members())), "");
  }

  std::optional<Volume> v_;
  Tree before_;
  std::string old_;
  uint64_t old_hash_ = 0;
};

TEST_F(PeregrineReplaceRefusal, NewTooSmall) {
  const std::string now = v_->dir() + "/small";
  ASSERT_TRUE(write_file(now, "x"));
  ASSERT_EQ(::truncate(now.c_str(), 32 << 20), 0);
  const uint64_t h = hash_file(now);
  RunResult r = replace(v_->members(), old_, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + now + ": too small (33554432 bytes)")) << r.err;
  expect_unchanged(now, h);
}

TEST_F(PeregrineReplaceRefusal, NewAlreadyAMember) {
  RunResult r = replace(v_->members(), old_, v_->members()[0]);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + v_->members()[0] + ": same file as member " + v_->members()[0] +
                                  ", already in the volume"))
      << r.err;
  // The same file under another name (a hard link) too.
  const std::string alias = v_->dir() + "/alias";
  ASSERT_EQ(::link(v_->members()[1].c_str(), alias.c_str()), 0);
  r = replace(v_->members(), old_, alias);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "same file as member " + v_->members()[1])) << r.err;
  // A member of another volume, without --force.
  Volume other(2);
  ASSERT_EQ(other.mkfs().code, 0);
  const uint64_t h = hash_file(other.members()[0]);
  r = replace(v_->members(), old_, other.members()[0]);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "already member 0 of 2 of peregrine volume")) << r.err;
  expect_unchanged(other.members()[0], h);
}

TEST_F(PeregrineReplaceRefusal, NewWithAFilesystemNeedsForce) {
  const std::string now = v_->dir() + "/ext4.img";
  RunResult made = run({"mkfs.ext4", "-q", "-F", now, "80M"});
  if (made.code != 0) GTEST_SKIP() << "mkfs.ext4 unavailable: " << made.describe();
  const uint64_t h = hash_file(now);
  RunResult r = replace(v_->members(), old_, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + now + ": holds an ext4 filesystem (use --force to overwrite)")) << r.err;
  expect_unchanged(now, h);
  r = replace(v_->members(), old_, now, {"--force"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(describe_tree_difference(before_, tree_of(*v_, with(v_->members(), old_, now))), "");
  RunResult ex = run({peregrine_bin(), "examine", now});
  EXPECT_TRUE(contains(ex.out, "member:           index 2 of 3")) << ex.describe();
}

TEST_F(PeregrineReplaceRefusal, OldNotAMember) {
  const std::string stray = v_->dir() + "/stray", now = v_->dir() + "/new";
  ASSERT_TRUE(write_file(stray, pattern(1 << 20, 3)));
  // Not among the members given.
  RunResult r = replace(v_->members(), stray, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "old member " + stray + ": not among the members given")) << r.err;
  // Given as a member, but it is none.
  std::vector<std::string> members = with(v_->members(), old_, stray);
  r = replace(members, stray, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "member " + stray + ": not a peregrine member")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(now));
  expect_unchanged(now, 0);
}

// A mounted volume is replaced online given its mount point alone
// (tests/fs/online_replace_test.cpp); given its members, or its mount point
// among members, the command refuses and says how.
TEST_F(PeregrineReplaceRefusal, MountedVolumeByItsMembers) {
  const std::string now = v_->dir() + "/new";
  ASSERT_EQ(v_->mount().code, 0);
  RunResult r = run({peregrine_bin(), "replace", v_->mountpoint(), v_->members()[0], "--old", old_, "--new", now});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "is mounted at " + v_->mountpoint() + ": give its mount point alone")) << r.err;
  r = replace(v_->members(), old_, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "in use: its volume is mounted at " + v_->mountpoint())) << r.err;
  EXPECT_TRUE(contains(r.err, "give its mount point instead of its members")) << r.err;
  ASSERT_EQ(v_->unmount(), 0);
  old_hash_ = hash_file(old_);  // the mount and unmount wrote OLD's mount record
  expect_unchanged(now, 0);
}

// Stopped after each step, the volume mounts (read-only, so that nothing
// is written to it) with OLD until OLD's last copy is cleared and with NEW
// from NEW's first superblock on, with every file; given both, assembly
// names the pair. The same command then finishes the replace.
class PeregrineReplaceInterrupted : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(PeregrineReplaceInterrupted, MountsWithOldOrNewAndARerunFinishes) {
  const std::string step = GetParam();
  Volume v(3);
  const Tree before = populate(v);
  const std::string old = v.members()[0], now = v.dir() + "/new0";
  RunResult r = replace_stopped(v.members(), old, now, step);
  ASSERT_EQ(r.code, 9) << r.describe();
  // The kernel lets go of a process's io_uring files (and so its member
  // locks) a moment after it exited.
  std::vector<std::string> all = v.members();
  all.push_back(now);
  wait_members_released(all);

  const bool old_usable = step != "old-backup";
  const bool new_usable = step == "new-primary" || step == "new-backup" || step == "old-primary" || !old_usable;
  const auto new_members = with(v.members(), old, now);
  if (old_usable) {
    EXPECT_EQ(describe_tree_difference(before, tree_of(v, v.members(), {"-o", "ro"})), "") << "OLD";
  } else {
    EXPECT_NE(info(v.members()).code, 0);
  }
  if (new_usable) {
    EXPECT_EQ(describe_tree_difference(before, tree_of(v, new_members, {"-o", "ro"})), "") << "NEW";
  } else {
    EXPECT_NE(info(new_members).code, 0);
  }
  if (old_usable && new_usable) {
    std::vector<std::string> both = v.members();
    both.push_back(now);
    RunResult in = info(both);
    EXPECT_NE(in.code, 0);
    EXPECT_TRUE(contains(in.err, "duplicated member") && contains(in.err, "interrupted 'peregrine replace'"))
        << in.describe();
    RunResult scan = run({peregrine_bin(), "scan", v.dir()});
    EXPECT_EQ(scan.code, 1) << scan.describe();
    EXPECT_TRUE(contains(scan.out, "member index 0 found 2 times") &&
                contains(scan.out, "an interrupted 'peregrine replace' leaves this"))
        << scan.describe();
  }

  RunResult again = replace(v.members(), old, now);
  ASSERT_EQ(again.code, 0) << again.describe();
  EXPECT_TRUE(contains(again.out, old_usable ? "replaced member index 0 of 3" : "already replaced")) << again.out;
  // Stopped in the switch, the copy is compared, not made again.
  EXPECT_EQ(contains(again.err, "the copy matches the old member: finishing the replace"), old_usable && new_usable)
      << again.err;
  EXPECT_EQ(contains(again.out, "the copy an interrupted run made matched"), old_usable && new_usable) << again.out;
  EXPECT_EQ(describe_tree_difference(before, tree_of(v, new_members)), "");
  EXPECT_NE(info(v.members()).code, 0);
  // OLD's mount record went with it, also when the run stopped before it.
  EXPECT_TRUE(all_zero(old, 4096, 320 * 1024)) << "OLD keeps a mount record";
}

INSTANTIATE_TEST_SUITE_P(Steps, PeregrineReplaceInterrupted,
                         ::testing::Values("copy:50", "copy", "verify", "new-primary", "new-backup", "old-primary",
                                           "old-backup"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-' || c == ':') c = '_';
                           return n;
                         });

// Stopped with both copies valid, then used with OLD (read-write): a rerun
// must not finish with NEW's stale copy. It refuses, naming the mounts
// (the comparison of the bytes tells, not the mount times: one second);
// with --force it copies OLD again, and the files written since are there.
TEST(PeregrineReplaceAfterUse, OldMountedSinceNeedsForceAndIsCopiedAgain) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2);
  populate(v);
  const std::string old = v.members()[1], now = v.dir() + "/new1";
  ASSERT_EQ(replace_stopped(v.members(), old, now, "new-backup").code, 9);
  wait_members_released({old, now});
  ASSERT_EQ(v.mount().code, 0);
  write_files(v, 5, 4 << 20);
  const Tree current = snapshot_tree(v.mountpoint(), false);
  ASSERT_EQ(v.unmount(), 0);

  RunResult r = replace(v.members(), old, now);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "from an interrupted replace, but no longer holds the same bytes as the old member"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "run this again with --force")) << r.err;
  r = replace(v.members(), old, now, {"--force"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(describe_tree_difference(current, tree_of(v, with(v.members(), old, now))), "");
}

// A sparse OLD gives a sparse NEW: the holes are not written.
TEST(PeregrineReplaceSparse, NewStaysSparse) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2, "512M");
  ASSERT_EQ(v.mkfs().code, 0);
  ASSERT_EQ(v.mount().code, 0);
  ASSERT_TRUE(write_file(v.at("f"), pattern(6 << 20, 9)));
  const Tree before = snapshot_tree(v.mountpoint(), false);
  ASSERT_EQ(v.unmount(), 0);
  const std::string old = v.members()[0], now = v.dir() + "/new0";
  struct stat so {};
  ASSERT_EQ(::stat(old.c_str(), &so), 0);
  ASSERT_LT(so.st_blocks * 512, 128 << 20) << "the old member is not sparse to begin with";
  RunResult r = replace(v.members(), old, now);
  ASSERT_EQ(r.code, 0) << r.describe();
  struct stat sn {};
  ASSERT_EQ(::stat(now.c_str(), &sn), 0);
  EXPECT_EQ(sn.st_size, so.st_size);
  // Allocated: what OLD had (its superblock blocks aside), and no more.
  EXPECT_LE(sn.st_blocks, so.st_blocks + 8) << "old " << so.st_blocks * 512 << " bytes, new " << sn.st_blocks * 512;
  EXPECT_EQ(describe_tree_difference(before, tree_of(v, with(v.members(), old, now))), "");
}

// kill -9 while the copy runs (once its first progress line is out, read
// from its stderr: the copy is under way): the volume still mounts with
// OLD, and the same command then replaces.
TEST(PeregrineReplaceKilled, DuringTheCopyLeavesOldInPlace) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2, "256M");
  ASSERT_EQ(v.mkfs().code, 0);
  ASSERT_EQ(v.mount().code, 0);
  write_files(v, 1, 160 << 20);
  const Tree before = snapshot_tree(v.mountpoint(), false);
  ASSERT_EQ(v.unmount(), 0);
  const std::string old = v.members()[1], now = v.dir() + "/new1";

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  pid_t pid = spawn({peregrine_bin(), "replace", v.members()[0], old, "--old", old, "--new", now}, pipe_fds[1]);
  ::close(pipe_fds[1]);
  LineReader lines;
  lines.reset(pipe_fds[0]);
  std::optional<std::string> line;
  while ((line = lines.next()) && !line->starts_with("replace: copy")) {
  }
  ASSERT_TRUE(line) << lines.seen();
  ::kill(pid, SIGKILL);
  int status = wait_exit(pid);
  wait_members_released({v.members()[0], old, now});
  // 160 MiB to copy after the first line: the kill lands first, unless this
  // process was not scheduled for the whole copy; then it simply finished.
  const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (killed) {
    EXPECT_NE(info(with(v.members(), old, now)).code, 0) << "a half copy must not be a member";
    EXPECT_EQ(describe_tree_difference(before, tree_of(v, v.members(), {"-o", "ro"})), "");
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << lines.seen();
  }
  RunResult r = replace(v.members(), old, now);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, killed ? "replaced member index 1" : "already replaced")) << r.out;
  EXPECT_EQ(describe_tree_difference(before, tree_of(v, with(v.members(), old, now))), "");
}

// Block devices (loop devices over files): a file member replaced by a
// device and back, the device read and written with O_DIRECT and claimed
// O_EXCL (a device claimed by someone else is refused as busy).
// Power cuts inside a replace: its writes to OLD and NEW go through the
// power-cut layer (PEREGRINE_TEST_POWER_CUT, fs/power_cut_members.h), the
// command dies as a chosen one of them starts, and every write no flush
// covered is kept, lost or torn. A rerun of the command then finishes
// (with --force where it refuses and names it) and the volume mounts with
// NEW in OLD's place, every file there. Rounds:
// PEREGRINE_POWER_CUT_REPLACE_ROUNDS (default 8); the seed is printed
// (PEREGRINE_CRASH_SEED reproduces).
TEST(PeregrineReplacePowerCut, power_cut_AnywhereInTheRunThenARerunFinishes) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const uint64_t rounds = env_u64("PEREGRINE_POWER_CUT_REPLACE_ROUNDS", 8);
  Volume v(2);
  const Tree before = populate(v);
  const std::string old = v.members()[1], now = v.dir() + "/new1";
  const auto new_members = with(v.members(), old, now);
  OfflineCommandCuts cuts(v, [&] { return replace(v.members(), old, now); });
  const uint64_t total = cuts.measure_whole_run();
  ASSERT_GT(total, 10u);
  const uint64_t seed = crash_seed("replace power cuts", rounds);
  for (uint64_t round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    cuts.put_members_back();
    ::unlink(now.c_str());
    // Every other round in the switch, the last writes and flushes of the
    // run (superblock copies of NEW, then OLD), which the copy outnumbers.
    const uint64_t r = mix(seed * 7919 + round);
    const uint64_t kill_at = round % 2 == 0 ? 1 + r % total : total - r % std::min<uint64_t>(total, 16);
    RunResult cut = cuts.run(kill_at);
    ASSERT_EQ(cut.code, 128 + SIGKILL) << "kill_at_io=" << kill_at << " of " << total << ": " << cut.describe();
    wait_members_released({old, now});
    // OLD logs as member 1, NEW as the volume's member count.
    const std::pair<std::string, uint32_t> logged[] = {{old, 1}, {now, 2}};
    for (const auto& [path, index] : logged) {
      if (!std::filesystem::exists(path)) continue;  // cut before NEW was made
      auto out = apply_power_cut(path, cuts.log(index), mix(seed + round * 31 + index));
      ASSERT_TRUE(static_cast<bool>(out)) << out.status().message();
    }
    RunResult again = replace(v.members(), old, now);
    if (again.code != 0 && contains(again.err, "--force")) {
      std::printf("kill_at_io=%llu: the rerun refused, then --force: %s", static_cast<unsigned long long>(kill_at),
                  again.err.c_str());
      again = replace(v.members(), old, now, {"--force"});
    }
    ASSERT_EQ(again.code, 0) << "kill_at_io=" << kill_at << " of " << total << ": " << again.describe();
    EXPECT_EQ(describe_tree_difference(before, tree_of(v, new_members)), "") << "kill_at_io=" << kill_at;
    std::vector<std::string> fsck = {peregrine_bin(), "fsck", "-n"};
    fsck.insert(fsck.end(), new_members.begin(), new_members.end());
    RunResult f = run(fsck);
    EXPECT_EQ(f.code, 0) << "kill_at_io=" << kill_at << ": " << f.describe();
    if (::testing::Test::HasFailure()) break;
  }
}

class PeregrineReplaceDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    dir_.emplace("peregrine-replace-dev");
    backing_ = *dir_ / "backing";
    ASSERT_TRUE(write_file(backing_, pattern(1 << 20, 4)));  // junk the replace must overwrite
    ASSERT_EQ(::truncate(backing_.c_str(), 80 << 20), 0);
    RunResult r = run({"losetup", "-f", "--show", backing_});
    if (r.code != 0 || r.out.empty()) GTEST_SKIP() << "losetup could not attach a loop device: " << r.describe();
    device_ = r.out.substr(0, r.out.find('\n'));
  }
  void TearDown() override {
    if (!device_.empty()) run({"losetup", "-d", device_});
  }
  std::optional<TempDir> dir_;
  std::string backing_, device_;
};

TEST_F(PeregrineReplaceDevice, FileToDeviceAndBack) {
  Volume v(2);
  const Tree before = populate(v);
  const std::string old = v.members()[0];

  Fd claim(::open(device_.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC));  // as a mounted filesystem would
  ASSERT_TRUE(claim.ok());
  RunResult busy = replace(v.members(), old, device_);
  EXPECT_EQ(busy.code, 1) << busy.describe();
  EXPECT_TRUE(contains(busy.err, device_) && contains(busy.err, "busy")) << busy.err;
  claim.reset();

  RunResult r = replace(v.members(), old, device_);
  ASSERT_EQ(r.code, 0) << r.describe();
  const auto on_device = with(v.members(), old, device_);
  EXPECT_EQ(describe_tree_difference(before, tree_of(v, on_device)), "");

  const std::string back = v.dir() + "/back0";
  r = replace(on_device, device_, back);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(describe_tree_difference(before, tree_of(v, with(on_device, device_, back))), "");
  RunResult ex = run({peregrine_bin(), "examine", device_});
  EXPECT_TRUE(contains(ex.out, "not a peregrine member")) << ex.describe();
}

}  // namespace
}  // namespace peregrine::fstest
