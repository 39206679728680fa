// Online replace (`peregrine replace --old OLD --new NEW MOUNTPOINT`) as a
// user runs it, on a mounted 4-member volume of file members: writers keep
// appending, rewriting in place (buffered and O_DIRECT) and fsyncing while
// the copy runs; afterwards every byte reads back, still mounted, then
// after a remount with NEW in OLD's place, and fsck is clean; OLD is no
// member. A daemon stopped in the copy (test hook, _exit with IO in flight)
// leaves OLD the member with every file, and the replace can be run again;
// stopped in the switch, the volume mounts with OLD or with NEW and the
// offline command finishes the replace; a switch that fails half-way keeps
// both members written until it does. Refusals change nothing.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "fs_test_util.h"
#include "member_change_util.h"
#include "online_power_cut.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

std::vector<std::string> with(std::vector<std::string> members, const std::string& old, const std::string& now) {
  for (std::string& m : members)
    if (m == old) m = now;
  return members;
}

RunResult replace_online(const Volume& v, const std::string& old, const std::string& now,
                         const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {peregrine_bin(), "replace", "--old", old, "--new", now};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(v.mountpoint());
  return run(argv);
}

class OnlineReplace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    v_.emplace(4, "64M");
    ASSERT_EQ(v_->mkfs().code, 0);
    ASSERT_EQ(v_->mount().code, 0);
    ASSERT_TRUE(write_file(v_->at("before"), pattern(20 << 20, 9)));
    old_ = v_->members()[1];
    now_ = v_->dir() + "/new1";
  }
  void TearDown() override {
    if (v_ && v_->mounted()) {
      EXPECT_EQ(v_->unmount(), 0);
    }
    v_.reset();
  }

  // Replaces OLD online (with `extra` options) while the writers of
  // write_until() run, from before the copy to after the command returned;
  // their expected contents in *want.
  RunResult replace_while_written(const std::string& old, const std::string& now, Contents* want,
                                  const std::vector<std::string>& extra = {}) {
    std::atomic<bool> stop{false};
    std::thread writer([&] { write_until(*v_, stop, 20, *want); });
    RunResult r = replace_online(*v_, old, now, extra);
    stop.store(true);
    writer.join();
    return r;
  }
  // Unmounts, checks the volume `members` make with fsck -n (clean), and
  // mounts it with them.
  void remount_checked(const std::vector<std::string>& members) {
    ASSERT_EQ(v_->unmount(), 0);
    wait_members_released(members);
    RunResult f = fsck(members);
    EXPECT_EQ(f.code, 0) << f.describe();
    ASSERT_EQ(v_->mount({}, members).code, 0);
  }
  // Remounts with PEREGRINE_TEST_REPLACE_STOP_AFTER=`hook` in the daemon's
  // environment.
  void remount_with_hook(const std::string& hook) {
    ASSERT_EQ(v_->unmount(), 0);
    ::setenv("PEREGRINE_TEST_REPLACE_STOP_AFTER", hook.c_str(), 1);
    RunResult m = v_->mount();
    ::unsetenv("PEREGRINE_TEST_REPLACE_STOP_AFTER");
    ASSERT_EQ(m.code, 0) << m.describe();
  }
  // Remounts with the test hook at `step` in the daemon's environment and
  // replaces OLD online: the daemon _exit(9)s there, the command fails;
  // reaps the daemon, detaches its mount, waits for the members.
  void replace_stopped_at(const std::string& step) {
    remount_with_hook(step);
    RunResult r = replace_online(*v_, old_, now_);
    EXPECT_EQ(r.code, 1) << r.describe();
    std::vector<std::string> all = v_->members();
    all.push_back(now_);
    reap_stopped_daemon(*v_, all);
  }

  // The volume unmounted: the offline command over its members finishes
  // the switch; fsck is then clean and the volume mounts with NEW.
  void finish_offline_and_mount_new() {
    std::vector<std::string> argv = {peregrine_bin(), "replace"};
    argv.insert(argv.end(), v_->members().begin(), v_->members().end());
    argv.insert(argv.end(), {"--old", old_, "--new", now_});
    RunResult r = run(argv);
    ASSERT_EQ(r.code, 0) << r.describe();
    const auto new_members = with(v_->members(), old_, now_);
    RunResult f = fsck(new_members);
    EXPECT_EQ(f.code, 0) << f.describe();
    ASSERT_EQ(v_->mount({}, new_members).code, 0);
  }

  std::optional<Volume> v_;
  std::string old_, now_;
};

TEST_F(OnlineReplace, WritersKeepGoingAndEveryByteSurvivesTheSwitchAndARemount) {
  Contents want;
  // Rate-limited so that the copy outlasts many rounds of the writers.
  RunResult r = replace_while_written(old_, now_, &want, {"--rate-limit", "64M"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "replaced member index 1 of")) << r.out;
  EXPECT_TRUE(contains(r.out, old_ + " is no longer a member")) << r.out;
  want[v_->at("before")] = pattern(20 << 20, 9);
  EXPECT_EQ(first_difference(want), "") << "still mounted";
  // The volume goes on with NEW alone: OLD is closed, and is no member.
  ASSERT_TRUE(write_file(v_->at("after"), pattern(6 << 20, 11)));
  want[v_->at("after")] = pattern(6 << 20, 11);
  RunResult ex = run({peregrine_bin(), "examine", old_});
  EXPECT_EQ(ex.code, 1) << ex.describe();
  const Tree tree = snapshot_tree(v_->mountpoint(), false);
  remount_checked(with(v_->members(), old_, now_));
  EXPECT_EQ(first_difference(want), "") << "after a remount with the new member";
  EXPECT_EQ(describe_tree_difference(tree, snapshot_tree(v_->mountpoint(), false)), "");
}

// The daemon stops half-way through the copy: OLD is still the member and
// holds every file; NEW is no member; running the replace again finishes.
TEST_F(OnlineReplace, ADaemonStoppedInTheCopyLeavesTheOldMemberAndARerunFinishes) {
  replace_stopped_at("copy:50");
  RunResult ex = run({peregrine_bin(), "examine", now_});
  EXPECT_EQ(ex.code, 1) << "NEW must be no member: " << ex.describe();

  ASSERT_EQ(v_->mount().code, 0);
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
  RunResult r = replace_online(*v_, old_, now_);
  ASSERT_EQ(r.code, 0) << r.describe();
  remount_checked(with(v_->members(), old_, now_));
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
}

// Stopped after each step of the switch: the volume mounts with OLD until
// OLD's last superblock copy is gone, with NEW from NEW's first one on; the
// offline command over the members then finishes the replace.
class OnlineReplaceSwitch : public OnlineReplace, public ::testing::WithParamInterface<std::string> {};

TEST_P(OnlineReplaceSwitch, StoppedAtAStepTheVolumeMountsAndTheOfflineCommandFinishes) {
  const std::string step = GetParam();
  replace_stopped_at(step);
  std::vector<std::string> all = v_->members();
  all.push_back(now_);

  const auto new_members = with(v_->members(), old_, now_);
  const bool old_usable = step != "old-backup";
  ASSERT_EQ(v_->mount({"-o", "ro"}, old_usable ? v_->members() : new_members).code, 0);
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
  ASSERT_EQ(v_->unmount(), 0);
  wait_members_released(all);

  ASSERT_NO_FATAL_FAILURE(finish_offline_and_mount_new());
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
}

INSTANTIATE_TEST_SUITE_P(Steps, OnlineReplaceSwitch,
                         ::testing::Values("new-primary", "new-backup", "old-primary", "old-backup"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// OLD fails to read half-way (the test hook's injected EIO): the replace
// gives up and says why, naming OLD and the offset; the writes that ran
// meanwhile are all on OLD, which goes on alone; the NEW the replace
// created is gone; and a later replace succeeds.
TEST_F(OnlineReplace, AReadErrorOnTheOldMemberGivesUpAndTheVolumeGoesOnWithIt) {
  remount_with_hook("read-error:50");
  Contents want;
  RunResult r = replace_while_written(old_, now_, &want, {"--rate-limit", "64M"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "gave up replacing member 1 (" + old_ + ") by " + now_ + ": cannot read old member " +
                                  old_ + ": Input/output error at offset"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "the volume goes on with the old member")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(now_)) << "the NEW the replace created is left";
  RunResult st = run({peregrine_bin(), "stats", v_->mountpoint()});
  EXPECT_TRUE(contains(st.out, "replace: member 1 " + old_ + " -> " + now_ + ": failed: gave up")) << st.out;
  want[v_->at("before")] = pattern(20 << 20, 9);
  EXPECT_EQ(first_difference(want), "");
  const Tree tree = snapshot_tree(v_->mountpoint(), false);
  remount_checked(v_->members());
  EXPECT_EQ(describe_tree_difference(tree, snapshot_tree(v_->mountpoint(), false)), "");
  r = replace_online(*v_, old_, now_);
  EXPECT_EQ(r.code, 0) << r.describe();
}

// The switch fails half-way (the test hook's injected error after a step):
// both members claim the index, so the daemon keeps writing to both. The
// command says so and how to finish; a second replace is refused with the
// same words; a file written afterwards is on NEW as well as OLD (the
// volume mounts with NEW, and with OLD while OLD keeps a superblock copy);
// NEW stays after the unmount though the replace created it; the offline
// command then finishes, and every byte reads back with NEW.
class OnlineReplaceFailedSwitch : public OnlineReplace, public ::testing::WithParamInterface<std::string> {};

TEST_P(OnlineReplaceFailedSwitch, BothMembersAreKeptUntilTheOfflineCommandFinishes) {
  const std::string step = GetParam();
  remount_with_hook("fail:" + step);
  RunResult r = replace_online(*v_, old_, now_);
  EXPECT_EQ(r.code, 1) << r.describe();
  const std::string said = "the switch of member 1 from " + old_ + " to " + now_ + " failed";
  EXPECT_TRUE(contains(r.err, said)) << r.err;
  EXPECT_TRUE(contains(r.err, "writes still reach both members")) << r.err;
  EXPECT_TRUE(contains(r.err, "with --old " + old_ + " --new " + now_ + " to finish")) << r.err;
  RunResult again = replace_online(*v_, old_, now_);
  EXPECT_EQ(again.code, 1) << again.describe();
  EXPECT_TRUE(contains(again.err, said)) << again.err;
  ASSERT_TRUE(write_file(v_->at("after"), pattern(6 << 20, 11)));
  ASSERT_EQ(v_->unmount(), 0);
  std::vector<std::string> all = v_->members();
  all.push_back(now_);
  wait_members_released(all);

  const auto new_members = with(v_->members(), old_, now_);
  std::vector<std::vector<std::string>> usable = {new_members};
  if (step != "old-backup") usable.push_back(v_->members());
  for (const auto& members : usable) {
    RunResult m = v_->mount({"-o", "ro"}, members);
    ASSERT_EQ(m.code, 0) << m.describe();
    EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
    EXPECT_EQ(read_file(v_->at("after")), pattern(6 << 20, 11)) << "written after the failed switch";
    ASSERT_EQ(v_->unmount(), 0);
    wait_members_released(all);
  }
  ASSERT_NO_FATAL_FAILURE(finish_offline_and_mount_new());
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
  EXPECT_EQ(read_file(v_->at("after")), pattern(6 << 20, 11));
}

INSTANTIATE_TEST_SUITE_P(Steps, OnlineReplaceFailedSwitch, ::testing::Values("new-primary", "old-backup"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// A real block device: a file member onto a loop device whose first
// megabyte holds junk (holes of OLD must not keep it), then back onto a
// file, writers running through both.
TEST_F(OnlineReplace, AFileMemberMovesOntoALoopDeviceAndBackWhileWritten) {
  JunkLoopDevice loop(v_->dir(), 80 << 20);
  if (loop.path().empty()) GTEST_SKIP() << loop.why();
  const std::string device = loop.path();

  std::atomic<bool> stop{false};
  Contents want;
  std::thread writer([&] { write_until(*v_, stop, 20, want); });
  RunResult onto = replace_online(*v_, old_, device, {"--force"});
  const std::string back = v_->dir() + "/back1";
  RunResult off = replace_online(*v_, device, back);
  stop.store(true);
  writer.join();
  ASSERT_EQ(onto.code, 0) << onto.describe();
  ASSERT_EQ(off.code, 0) << off.describe();
  want[v_->at("before")] = pattern(20 << 20, 9);
  EXPECT_EQ(first_difference(want), "");
  remount_checked(with(v_->members(), old_, back));
  EXPECT_EQ(first_difference(want), "") << "after a remount";
  RunResult ex = run({peregrine_bin(), "examine", device});
  EXPECT_TRUE(contains(ex.out, "not a peregrine member")) << ex.describe();
}

TEST_F(OnlineReplace, RefusalsSayWhyAndChangeNothing) {
  // Not a member.
  const std::string stranger = v_->dir() + "/stranger";
  ASSERT_TRUE(write_file(stranger, "x"));
  RunResult r = replace_online(*v_, stranger, now_);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "old member " + stranger + ": not a member of this volume")) << r.err;
  // NEW is a member already.
  r = replace_online(*v_, old_, v_->members()[2]);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "same file as member " + v_->members()[2])) << r.err;
  // NEW too small.
  const std::string small = v_->dir() + "/small";
  ASSERT_TRUE(write_file(small, "x"));
  ASSERT_EQ(::truncate(small.c_str(), 8 << 20), 0);
  r = replace_online(*v_, old_, small);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + small + ": too small")) << r.err;
  // A bad rate.
  r = replace_online(*v_, old_, now_, {"--rate-limit", "fast"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(now_));
  EXPECT_EQ(read_file(small), "x" + std::string((8 << 20) - 1, '\0')) << "NEW was written";
  EXPECT_EQ(read_file(v_->at("before")), pattern(20 << 20, 9));
}

TEST_F(OnlineReplace, AReadOnlyMountIsRefused) {
  ASSERT_EQ(v_->unmount(), 0);
  ASSERT_EQ(v_->mount({"-o", "ro"}).code, 0);
  RunResult r = replace_online(*v_, old_, now_);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "mounted read-only")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(now_));
}

// Power cuts in an online replace (online_power_cut.h): NEW logs as the
// volume's member count; the offline replace finishes. Rounds:
// PEREGRINE_POWER_CUT_ONLINE_REPLACE_ROUNDS (default 6); the seed is
// printed (PEREGRINE_CRASH_SEED reproduces).
TEST(OnlineReplacePowerCut, power_cut_AnywhereAfterTheMountThenTheOfflineCommandFinishes) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2);
  ASSERT_EQ(v.mkfs().code, 0);
  ASSERT_EQ(v.mount().code, 0);
  const std::string old = v.members()[1], now = v.dir() + "/new1";
  OnlineChange change;
  change.what = "online replace power cuts";
  change.added = {now};
  change.online = [&](const Volume& mounted) { return replace_online(mounted, old, now); };
  change.offline = {peregrine_bin(), "replace"};
  change.offline.insert(change.offline.end(), v.members().begin(), v.members().end());
  change.offline.insert(change.offline.end(), {"--old", old, "--new", now});
  change.final_members = with(v.members(), old, now);
  cut_power_through_online_change(v, change, env_u64("PEREGRINE_POWER_CUT_ONLINE_REPLACE_ROUNDS", 6));
}

}  // namespace
}  // namespace peregrine::fstest
