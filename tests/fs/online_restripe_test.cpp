// Online restripe (`peregrine grow --add NEW... MOUNTPOINT`) as a user runs
// it, on a mounted 2-member volume of file members: writers keep appending,
// rewriting in place (buffered and O_DIRECT) and fsyncing while the units
// move onto four members; afterwards every byte reads back, still mounted,
// then after a remount over the four, and fsck is clean, with the added
// space in df. A daemon killed at a superblock copy (test hook: the
// record's, a window's cursor, the commit's), or a volume unmounted while
// the units move, leaves a volume the offline command finishes (or, before
// an old member carries the record, the old volume as it was). A mount
// restripes again onto more members. One given up part-way leaves a
// mount that serves and refuses other member changes. A loop device joins
// as a member. Refusals say why and change nothing. Power
// cuts at any member IO leave a volume the offline command finishes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "fs_test_util.h"
#include "member_change_util.h"
#include "online_power_cut.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

constexpr const char* kStopEnv = "PEREGRINE_TEST_RESTRIPE_STOP_AFTER";

uint64_t volume_bytes(const std::string& mnt) {
  struct statvfs s {};
  EXPECT_EQ(::statvfs(mnt.c_str(), &s), 0);
  return uint64_t{s.f_blocks} * s.f_frsize;
}

class OnlineRestripe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    v_.emplace(2, member_size_);
    ASSERT_EQ(v_->mkfs().code, 0);
    ASSERT_EQ(v_->mount().code, 0);
    ASSERT_TRUE(write_file(v_->at("before"), pattern(before_bytes_, 9)));
    added_ = {v_->dir() + "/new2", v_->dir() + "/new3"};
  }
  void TearDown() override {
    if (v_ && v_->mounted()) {
      EXPECT_EQ(v_->unmount(), 0);
    }
    v_.reset();
  }

  std::vector<std::string> all() const {
    std::vector<std::string> m = v_->members();
    m.insert(m.end(), added_.begin(), added_.end());
    return m;
  }
  RunResult add_online(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {peregrine_bin(), "grow"};
    for (const std::string& a : added_) argv.insert(argv.end(), {"--add", a});
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(v_->mountpoint());
    return run(argv);
  }
  RunResult finish_offline() {
    std::vector<std::string> argv = {peregrine_bin(), "grow"};
    for (const std::string& a : added_) argv.insert(argv.end(), {"--add", a});
    argv.insert(argv.end(), v_->members().begin(), v_->members().end());
    return run(argv);
  }
  // The offline command finishes the restripe the daemon left; fsck -n
  // passes over the four members, and they mount.
  void finish_offline_and_mount() {
    RunResult done = finish_offline();
    ASSERT_EQ(done.code, 0) << done.describe();
    RunResult f = fsck(all());
    EXPECT_EQ(f.code, 0) << f.describe();
    ASSERT_EQ(v_->mount({}, all()).code, 0);
  }
  // Unmounts, checks the four members with fsck -n, mounts over them.
  void remount_all_checked() {
    ASSERT_EQ(v_->unmount(), 0);
    wait_members_released(all());
    RunResult f = fsck(all());
    EXPECT_EQ(f.code, 0) << f.describe();
    ASSERT_EQ(v_->mount({}, all()).code, 0);
  }
  // Remounts with the test hook kStopEnv=`hook` in the daemon's
  // environment.
  void remount_with_hook(const std::string& hook) {
    ASSERT_EQ(v_->unmount(), 0);
    ::setenv(kStopEnv, hook.c_str(), 1);
    RunResult m = v_->mount();
    ::unsetenv(kStopEnv);
    ASSERT_EQ(m.code, 0) << m.describe();
  }
  // The daemon's "engine" statistics: the settings in effect.
  nlohmann::json engine_stats() {
    RunResult j = run({peregrine_bin(), "stats", "--json", v_->mountpoint()});
    EXPECT_EQ(j.code, 0) << j.describe();
    auto doc = nlohmann::json::parse(j.out, nullptr, false);
    return doc.is_object() && doc.contains("engine") ? doc["engine"] : nlohmann::json::object();
  }
  // The daemon's "restripe" statistics (null when it has none).
  nlohmann::json restripe_stats() {
    RunResult j = run({peregrine_bin(), "stats", "--json", v_->mountpoint()});
    if (j.code != 0) return nullptr;
    auto doc = nlohmann::json::parse(j.out, nullptr, false);
    return doc.is_object() && doc.contains("restripe") ? doc["restripe"] : nlohmann::json();
  }

  std::optional<Volume> v_;
  std::vector<std::string> added_;
  uint64_t before_bytes_ = 40 << 20;  // of the file "before"
  std::string member_size_ = "64M";
};

TEST_F(OnlineRestripe, WritersKeepGoingAndEveryByteSurvivesTheMoveAndARemount) {
  const uint64_t before_bytes = volume_bytes(v_->mountpoint());
  std::atomic<bool> stop{false};
  Contents want;
  std::thread writer([&] { write_until(*v_, stop, 20, want); });
  // Rate-limited so that the move outlasts many rounds of the writers.
  RunResult r = add_online({"--rate-limit", "48M"});
  stop.store(true);
  writer.join();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "(online): 2 -> 4 members")) << r.out;
  EXPECT_TRUE(contains(r.err, "restriping from 2 onto 4 members online")) << r.err;
  want[v_->at("before")] = pattern(40 << 20, 9);
  EXPECT_EQ(first_difference(want), "") << "still mounted";
  // The new space is there at once, and takes data, in stripes twice as wide.
  EXPECT_GT(volume_bytes(v_->mountpoint()), before_bytes * 19 / 10);
  ASSERT_TRUE(write_file(v_->at("after"), pattern(100 << 20, 11)));
  struct stat after_st;
  ASSERT_EQ(::stat(v_->at("after").c_str(), &after_st), 0);
  EXPECT_EQ(after_st.st_blksize, 4 * 128 * 1024) << "st_blksize is still the 2 members' stripe";
  want[v_->at("after")] = pattern(100 << 20, 11);
  const nlohmann::json st = restripe_stats();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "done");
  EXPECT_EQ(st["new_members"], 4);
  EXPECT_EQ(st["done_bytes"], st["total_bytes"]);
  EXPECT_GT(st["windows"].get<uint64_t>(), 1u);
  RunResult text = run({peregrine_bin(), "stats", v_->mountpoint()});
  EXPECT_TRUE(contains(text.out, "restripe: 2 -> 4 members: done 100%")) << text.out;
  EXPECT_TRUE(contains(text.out, "/new3 ")) << "the added members are named: " << text.out;
  const Tree tree = snapshot_tree(v_->mountpoint(), false);
  remount_all_checked();
  EXPECT_EQ(first_difference(want), "") << "after a remount over the four members";
  EXPECT_EQ(describe_tree_difference(tree, snapshot_tree(v_->mountpoint(), false)), "");
  // Only the four together make the volume now.
  ASSERT_EQ(v_->unmount(), 0);
  wait_members_released(all());
  EXPECT_NE(v_->mount().code, 0) << "the two old members alone mounted";
}

// The bytes a file takes on its filesystem (its holes take none).
uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return uint64_t(st.st_blocks) * 512;
}

// Sparse file members stay sparse: the move looks for each closed
// window's holes and neither reads them nor writes them out as zeros, so
// the four members hold about what the volume holds (the 42 MiB of files,
// the metadata in use: 46 MiB in all), where copying every unit wrote out
// the whole of the two old members' space (126 MiB).
// A file written with holes of its own, and one written after the move
// over space that was a hole, read back exactly.
TEST_F(OnlineRestripe, SparseMembersStaySparseAndEveryByteReadsBack) {
  Contents want{{v_->at("before"), pattern(before_bytes_, 9)}};
  {
    Fd fd(::open(v_->at("gappy").c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_GE(fd.get(), 0);
    const std::string a = pattern(1 << 20, 21), b = pattern(1 << 20, 22);
    ASSERT_EQ(::pwrite(fd.get(), a.data(), a.size(), 0), ssize_t(a.size()));
    ASSERT_EQ(::pwrite(fd.get(), b.data(), b.size(), 9 << 20), ssize_t(b.size()));
    ASSERT_EQ(::fsync(fd.get()), 0);
    want[v_->at("gappy")] = a + std::string(8 << 20, '\0') + b;
  }
  RunResult r = add_online();
  ASSERT_EQ(r.code, 0) << r.describe();
  uint64_t held = 0;
  for (const std::string& m : all()) held += allocated_bytes(m);
  std::printf("the four members hold %llu MiB after the move\n", static_cast<unsigned long long>(held >> 20));
  EXPECT_LT(held, uint64_t{80} << 20) << "the move wrote out the members' holes";
  // The report counts what was copied, not the holes with it.
  std::smatch said;
  ASSERT_TRUE(std::regex_search(r.out, said, std::regex(R"(moved ([0-9.]+) (KiB|MiB) in .* ([0-9.]+) (KiB|MiB) of holes)")))
      << r.out;
  auto mib = [&](int at) { return std::stod(said[at]) / (said[at + 1] == "KiB" ? 1024 : 1); };
  EXPECT_LT(mib(1), 80.0) << r.out;
  EXPECT_GT(mib(3), 40.0) << r.out;
  EXPECT_EQ(first_difference(want), "") << "still mounted";
  want[v_->at("after")] = pattern(60 << 20, 23);
  ASSERT_TRUE(write_file(v_->at("after"), want[v_->at("after")]));
  remount_all_checked();
  EXPECT_EQ(first_difference(want), "") << "after a remount over the four members";
}

// A mount that restriped may restripe again: 2 -> 3, then, writers
// running, 3 -> 4; both added members are named, and every byte reads
// back mounted and after a remount over the four.
TEST_F(OnlineRestripe, AMountRestripesAgainOntoMoreMembers) {
  const std::vector<std::string> both = added_;
  const nlohmann::json two = engine_stats();
  added_ = {both[0]};
  RunResult r = add_online();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "(online): 2 -> 3 members")) << r.out;
  Contents want;
  want[v_->at("between")] = pattern(30 << 20, 12);
  ASSERT_TRUE(write_file(v_->at("between"), want[v_->at("between")]));
  added_ = {both[1]};
  std::atomic<bool> stop{false};
  std::thread writer([&] { write_until(*v_, stop, 20, want); });
  r = add_online({"--rate-limit", "48M"});
  stop.store(true);
  writer.join();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "(online): 3 -> 4 members")) << r.out;
  added_ = both;
  want[v_->at("before")] = pattern(before_bytes_, 9);
  EXPECT_EQ(first_difference(want), "") << "still mounted";
  const nlohmann::json st = restripe_stats();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "done");
  EXPECT_EQ(st["new_members"], 4);
  EXPECT_EQ(st["done_bytes"], st["total_bytes"]);
  // The watermarks are per drive in the config: the volume's doubled.
  const nlohmann::json four = engine_stats();
  EXPECT_EQ(four["low_watermark"], 2 * two["low_watermark"].get<uint64_t>()) << four.dump();
  EXPECT_EQ(four["high_watermark"], 2 * two["high_watermark"].get<uint64_t>()) << four.dump();
  RunResult text = run({peregrine_bin(), "stats", v_->mountpoint()});
  EXPECT_TRUE(contains(text.out, "restripe: 3 -> 4 members: done 100%")) << text.out;
  EXPECT_TRUE(contains(text.out, "/new2 ") && contains(text.out, "/new3 ")) << "the added members are named: "
                                                                             << text.out;
  remount_all_checked();
  EXPECT_EQ(first_difference(want), "") << "after a remount over the four members";
}

// The daemon _exit(9)s right after superblock copy K of the restripe
// (copies 1-4: the new members' record, 5-8 the old members', then eight
// a window), or copy K of the commit ("commit:K": 1-4 the new members', 5-8
// the old ones').
class OnlineRestripeStopped : public OnlineRestripe, public ::testing::WithParamInterface<std::string> {};

TEST_P(OnlineRestripeStopped, AtACopyTheVolumeIsOldOrTheOfflineCommandFinishesIt) {
  const std::string hook = GetParam();
  const bool in_commit = hook.starts_with("commit:");
  const int step = in_commit ? 0 : std::atoi(hook.c_str());
  ASSERT_NO_FATAL_FAILURE(remount_with_hook(hook));
  RunResult r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  reap_stopped_daemon(*v_, all());

  // Until an old member's copy carries the record, the old volume is as it
  // was; from then on it refuses to mount and names the way out.
  RunResult old_mount = v_->mount({"-o", "ro"});
  if (!in_commit && step <= 4) {
    ASSERT_EQ(old_mount.code, 0) << old_mount.describe();
    EXPECT_EQ(read_file(v_->at("before")), pattern(40 << 20, 9));
    ASSERT_EQ(v_->unmount(), 0);
  } else {
    EXPECT_NE(old_mount.code, 0) << old_mount.describe();
    if (!in_commit) {
      EXPECT_TRUE(contains(old_mount.err, "interrupted restripe")) << old_mount.err;
    }
  }
  wait_members_released(all());
  finish_offline_and_mount();
  EXPECT_EQ(read_file(v_->at("before")), pattern(40 << 20, 9));
}

INSTANTIATE_TEST_SUITE_P(Copies, OnlineRestripeStopped,
                         ::testing::Values("2", "6", "commit:2", "commit:6"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = "copy_" + i.param;
                           for (char& c : n)
                             if (c == ':') c = '_';
                           return n;
                         });

// kill -9 in every window: the daemon _exit(9)s at one of each window's
// eight cursor copies in turn (window w: its copy w % 8 + 1), IO in
// flight, until a run ends before the copy comes; after each, the old
// members refuse to mount, the offline command finishes the restripe, fsck
// is clean and the file reads back over the four. Fewer data than the
// other tests: a round per window.
class OnlineRestripeWindows : public OnlineRestripe {
 protected:
  OnlineRestripeWindows() {
    member_size_ = "24M";
    before_bytes_ = 8 << 20;
  }
};

TEST_F(OnlineRestripeWindows, KilledInEveryWindowTheOfflineCommandFinishes) {
  ASSERT_EQ(v_->unmount(), 0);
  std::vector<std::string> pristine;
  for (const std::string& m : v_->members()) {
    pristine.push_back(m + ".pristine");
    ASSERT_EQ(run({"cp", "--sparse=always", m, pristine.back()}).code, 0);
  }
  const std::string before = pattern(before_bytes_, 9);
  uint64_t window = 0;
  for (;; ++window) {
    SCOPED_TRACE("killed in window " + std::to_string(window));
    for (size_t i = 0; i < pristine.size(); ++i)
      ASSERT_EQ(run({"cp", "--sparse=always", pristine[i], v_->members()[i]}).code, 0);
    for (const std::string& a : added_) ::unlink(a.c_str());
    const uint64_t copy = 8 + 8 * window + window % 8 + 1;
    ::setenv(kStopEnv, std::to_string(copy).c_str(), 1);
    RunResult m = v_->mount();
    ::unsetenv(kStopEnv);
    ASSERT_EQ(m.code, 0) << m.describe();
    RunResult r = add_online();
    if (r.code == 0) break;  // the move and its commit took fewer copies
    ASSERT_EQ(r.code, 1) << r.describe();
    reap_stopped_daemon(*v_, all());
    RunResult old_mount = v_->mount({"-o", "ro"});
    EXPECT_NE(old_mount.code, 0) << old_mount.describe();
    wait_members_released(all());
    finish_offline_and_mount();
    EXPECT_EQ(first_difference({{v_->at("before"), before}}), "");
    ASSERT_EQ(v_->unmount(), 0);
    wait_members_released(all());
    if (::testing::Test::HasFailure()) return;
  }
  // The last rounds may have cut the commit: windows enough to mean
  // "every".
  std::printf("killed in %llu windows\n", static_cast<unsigned long long>(window));
  EXPECT_GE(window, 3u) << "the restripe took too few windows to test";
}

// Unmounted while the units move: the move stops at a window boundary,
// the command says what to do, and the offline command finishes.
TEST_F(OnlineRestripe, UnmountedWhileMovingTheOfflineCommandFinishes) {
  RunResult r;
  std::thread adder([&] { r = add_online({"--rate-limit", "4M"}); });
  // Moving (the statistics say so), then unmounted.
  for (int i = 0; i < 6000; ++i) {
    const nlohmann::json st = restripe_stats();
    if (st.is_object() && st["state"] == "moving" && st["windows"].get<uint64_t>() >= 1) break;
    std::this_thread::yield();
  }
  ASSERT_EQ(v_->unmount(), 0);
  adder.join();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "unmounted while the restripe ran")) << r.err;
  wait_members_released(all());
  RunResult old_mount = v_->mount({"-o", "ro"});
  EXPECT_NE(old_mount.code, 0) << old_mount.describe();
  RunResult done = finish_offline();
  ASSERT_EQ(done.code, 0) << done.describe();
  EXPECT_TRUE(contains(done.err, "resuming the interrupted restripe")) << done.err;
  ASSERT_EQ(v_->mount({}, all()).code, 0);
  EXPECT_EQ(read_file(v_->at("before")), pattern(40 << 20, 9));
}

// Given up part-way (the test hook stops the move after two windows, as
// an IO error would): the mount goes on serving over its two layouts,
// refuses every other change of its member list with a reason, unmounts
// cleanly, and the offline command finishes what it left.
TEST_F(OnlineRestripe, GivenUpPartWayTheMountServesAndRefusesOtherChanges) {
  ASSERT_NO_FATAL_FAILURE(remount_with_hook("give-up:2"));
  RunResult r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "the restripe stopped")) << r.err;
  const nlohmann::json st = restripe_stats();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "stopped");
  EXPECT_EQ(st["windows"], 2) << st.dump();
  EXPECT_GT(st["done_bytes"].get<uint64_t>(), 0u) << st.dump();
  EXPECT_LT(st["done_bytes"].get<uint64_t>(), st["total_bytes"].get<uint64_t>()) << st.dump();
  Contents want{{v_->at("before"), pattern(before_bytes_, 9)}, {v_->at("after"), pattern(30 << 20, 13)}};
  ASSERT_TRUE(write_file(v_->at("after"), want[v_->at("after")]));
  EXPECT_EQ(first_difference(want), "") << "served while the restripe stands stopped";
  const std::string stopped = "stopped part-way";
  RunResult grow = run({peregrine_bin(), "grow", v_->mountpoint()});
  EXPECT_NE(grow.code, 0) << grow.describe();
  EXPECT_TRUE(contains(grow.err, stopped)) << grow.err;
  RunResult replace =
      run({peregrine_bin(), "replace", "--old", v_->members()[0], "--new", v_->dir() + "/other", v_->mountpoint()});
  EXPECT_NE(replace.code, 0) << replace.describe();
  EXPECT_TRUE(contains(replace.err, stopped)) << replace.err;
  EXPECT_FALSE(std::filesystem::exists(v_->dir() + "/other")) << "a refused replace made its NEW";
  const std::vector<std::string> first = added_;
  added_ = {v_->dir() + "/new4"};
  RunResult again = add_online();
  EXPECT_NE(again.code, 0) << again.describe();
  EXPECT_FALSE(std::filesystem::exists(added_[0])) << "a refused restripe made its NEW";
  added_ = first;
  ASSERT_EQ(v_->unmount(), 0);
  wait_members_released(all());
  RunResult old_mount = v_->mount({"-o", "ro"});
  EXPECT_NE(old_mount.code, 0) << old_mount.describe();
  finish_offline_and_mount();
  EXPECT_EQ(first_difference(want), "") << "after the offline command finished the restripe";
}

// A window's cursor that fails after every copy holds it (a sync failing
// after its write landed): the window is served from its old places
// again, so every copy must say so, or the offline command would resume
// past what is written there afterwards. Window 12 lies inside the file
// "before" (the windows before it hold the metadata area's blocks and its
// holes); window 3 or 5 would not show the loss.
TEST_F(OnlineRestripe, AFailedCursorIsSetBackSoTheOfflineCommandCopiesTheWindowAnew) {
  ASSERT_NO_FATAL_FAILURE(remount_with_hook("fail-cursor:12"));
  RunResult r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "the cursor of window 12 failed")) << r.err;
  const nlohmann::json st = restripe_stats();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "stopped");
  EXPECT_EQ(st["windows"], 12) << st.dump();
  // Rewritten in place, so the new bytes land where the old ones were,
  // the failed window among them.
  const std::string now = pattern(before_bytes_, 21);
  {
    const int fd = ::open(v_->at("before").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(write_at(fd, now, 0));
    EXPECT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  ASSERT_EQ(v_->unmount(), 0);
  wait_members_released(all());
  finish_offline_and_mount();
  EXPECT_TRUE(read_file(v_->at("before")) == now) << "written after the failed cursor, then restriped offline";
}

// If setting the failed cursor back fails too, some copies may say the
// window moved while it is served from its old places, and the offline
// command would not copy what is written there from now on: the volume
// stops taking changes instead, so nothing acknowledged is lost.
TEST_F(OnlineRestripe, AFailedSetBackStopsTheVolumeTakingChanges) {
  ASSERT_NO_FATAL_FAILURE(remount_with_hook("fail-cursor-back:12"));
  RunResult r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "setting the cursor back failed too")) << r.err;
  EXPECT_TRUE(contains(r.err, "The volume is read-only")) << r.err;
  const nlohmann::json st = restripe_stats();
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st["state"], "stopped");
  // A rewrite in place, across the window, is refused at its fsync.
  {
    const int fd = ::open(v_->at("before").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    write_at(fd, pattern(before_bytes_, 22), 0);  // may land in the page cache only
    EXPECT_NE(::fsync(fd), 0) << "a write was taken after the cursor was left unsafe";
    ::close(fd);
  }
  // And so is a new file.
  errno = 0;
  EXPECT_LT(::open(v_->at("after").c_str(), O_WRONLY | O_CREAT, 0644), 0);
  EXPECT_EQ(errno, EROFS);
  // The daemon says at its exit that it wrote no checkpoint.
  const int status = v_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  wait_members_released(all());
  finish_offline_and_mount();
  EXPECT_TRUE(read_file(v_->at("before")) == pattern(before_bytes_, 9)) << "the file as it was before the failure";
  EXPECT_FALSE(std::filesystem::exists(v_->at("after")));
}

// A block device joins: a loop device whose first megabyte holds junk,
// with writers running.
TEST_F(OnlineRestripe, ALoopDeviceJoinsTheMountedVolumeWhileWritten) {
  JunkLoopDevice loop(v_->dir(), 80 << 20);
  if (loop.path().empty()) GTEST_SKIP() << loop.why();
  const std::string device = loop.path();
  added_ = {device};
  std::atomic<bool> stop{false};
  Contents want;
  std::thread writer([&] { write_until(*v_, stop, 20, want); });
  RunResult r = add_online({"--force"});
  stop.store(true);
  writer.join();
  ASSERT_EQ(r.code, 0) << r.describe();
  want[v_->at("before")] = pattern(40 << 20, 9);
  EXPECT_EQ(first_difference(want), "");
  remount_all_checked();
  EXPECT_EQ(first_difference(want), "") << "after a remount";
  ASSERT_EQ(v_->unmount(), 0);
  wait_members_released(all());
}

TEST_F(OnlineRestripe, RefusalsSayWhyAndChangeNothing) {
  // A member already.
  added_ = {v_->members()[1]};
  RunResult r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "same file as member " + v_->members()[1])) << r.err;
  // Too small.
  const std::string small = v_->dir() + "/small";
  ASSERT_TRUE(write_file(small, "x"));
  ASSERT_EQ(::truncate(small.c_str(), 8 << 20), 0);
  added_ = {small};
  r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "new member " + small + ": too small")) << r.err;
  EXPECT_EQ(read_file(small), "x" + std::string((8 << 20) - 1, '\0')) << "NEW was written";
  // A bad rate, and a rate for an unmounted volume.
  added_ = {v_->dir() + "/new2"};
  r = add_online({"--rate-limit", "fast"});
  EXPECT_EQ(r.code, 2) << r.describe();
  r = run({peregrine_bin(), "grow", "--add", added_[0], "--rate-limit", "1M", v_->members()[0], v_->members()[1]});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(added_[0]));
  EXPECT_TRUE(restripe_stats().is_null()) << "a refused start left statistics";
  // Read-only.
  ASSERT_EQ(v_->unmount(), 0);
  ASSERT_EQ(v_->mount({"-o", "ro"}).code, 0);
  r = add_online();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "mounted read-only")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(added_[0]));
  EXPECT_EQ(read_file(v_->at("before")), pattern(40 << 20, 9));
}

// Power cuts through an online restripe (online_power_cut.h): the added
// members log after the old ones; the offline grow --add finishes it (or
// does it all, when the cut came before an old member carried the
// record). Rounds: PEREGRINE_POWER_CUT_ONLINE_RESTRIPE_ROUNDS (default 6);
// the seed is printed (PEREGRINE_CRASH_SEED reproduces).
TEST(OnlineRestripePowerCut, power_cut_AnywhereAfterTheMountThenTheOfflineCommandFinishes) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(2);
  ASSERT_EQ(v.mkfs().code, 0);
  ASSERT_EQ(v.mount().code, 0);
  OnlineChange change;
  change.what = "online restripe power cuts";
  change.added = {v.dir() + "/new2", v.dir() + "/new3"};
  change.online = [&](const Volume& mounted) {
    return run({peregrine_bin(), "grow", "--add", change.added[0], "--add", change.added[1], mounted.mountpoint()});
  };
  change.offline = {peregrine_bin(), "grow", "--add", change.added[0], "--add", change.added[1]};
  change.offline.insert(change.offline.end(), v.members().begin(), v.members().end());
  change.final_members = v.members();
  change.final_members.insert(change.final_members.end(), change.added.begin(), change.added.end());
  cut_power_through_online_change(v, change, env_u64("PEREGRINE_POWER_CUT_ONLINE_RESTRIPE_ROUNDS", 6));
}

}  // namespace
}  // namespace peregrine::fstest
