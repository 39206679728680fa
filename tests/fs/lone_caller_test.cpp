// LoneCaller: alone while no READ or WRITE and no second caller came for
// kQuietNs, never when disabled; requests nobody waits for (forgets) and
// RELEASE, which comes with pid 0, change nothing; other requests with pid
// 0 (a caller in an unseen pid namespace) end it.
#include "peregrine/fs/lone_caller.h"

#include <gtest/gtest.h>
#include <linux/fuse.h>

#include <cstring>
#include <vector>

namespace peregrine::fs {
namespace {

std::vector<char> request(uint32_t opcode, uint32_t pid) {
  std::vector<char> msg(sizeof(fuse_in_header) + 16, 'x');
  fuse_in_header h{};
  h.len = static_cast<uint32_t>(msg.size());
  h.opcode = opcode;
  h.unique = 1;
  h.pid = pid;
  std::memcpy(msg.data(), &h, sizeof h);
  return msg;
}

constexpr uint64_t kQuiet = LoneCaller::kQuietNs;
constexpr uint64_t kStart = 10 * kQuiet;  // a clock well past its first quiet period

void note(LoneCaller& lone, uint32_t opcode, uint32_t pid, uint64_t now) {
  const std::vector<char> msg = request(opcode, pid);
  lone.note_request(msg.data(), msg.size(), now);
}

TEST(LoneCallerTest, DisabledIsNeverAlone) {
  LoneCaller lone;
  EXPECT_FALSE(lone.alone(kStart));
  note(lone, FUSE_LOOKUP, 100, kStart);
  EXPECT_FALSE(lone.alone(kStart + 2 * kQuiet));
}

TEST(LoneCallerTest, AloneUntilADataRequestThenAgainAfterAQuietPeriod) {
  LoneCaller lone;
  lone.set_enabled(true);
  EXPECT_TRUE(lone.alone(kStart));
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_GETXATTR, 100, kStart + 1);
  EXPECT_TRUE(lone.alone(kStart + 2)) << "one caller's metadata requests";
  for (uint32_t op : {FUSE_READ, FUSE_WRITE}) {
    const uint64_t t = kStart + 10 * kQuiet * op;
    note(lone, op, 100, t);
    EXPECT_FALSE(lone.alone(t + kQuiet)) << "opcode " << op;
    EXPECT_TRUE(lone.alone(t + kQuiet + 1)) << "opcode " << op;
  }
}

TEST(LoneCallerTest, ASecondCallerEndsItForAQuietPeriod) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_LOOKUP, 200, kStart + 5);
  EXPECT_FALSE(lone.alone(kStart + 5 + kQuiet));
  EXPECT_TRUE(lone.alone(kStart + 6 + kQuiet));
  note(lone, FUSE_GETATTR, 200, kStart + 7 + kQuiet);
  EXPECT_TRUE(lone.alone(kStart + 8 + kQuiet)) << "the new caller alone";
}

TEST(LoneCallerTest, ForgetsAndReleasesChangeNothing) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_FORGET, 300, kStart + 1);
  note(lone, FUSE_BATCH_FORGET, 301, kStart + 2);
  note(lone, FUSE_INTERRUPT, 302, kStart + 3);
  note(lone, FUSE_RELEASE, 0, kStart + 4);
  EXPECT_TRUE(lone.alone(kStart + 5));
  note(lone, FUSE_LOOKUP, 100, kStart + 6);
  EXPECT_TRUE(lone.alone(kStart + 7)) << "the caller of before is still the last one";
}

TEST(LoneCallerTest, PidZeroEndsItButOnARelease) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_RELEASEDIR, 0, kStart + 1);
  EXPECT_TRUE(lone.alone(kStart + 2));
  note(lone, FUSE_LOOKUP, 0, kStart + 3);
  EXPECT_FALSE(lone.alone(kStart + 3 + kQuiet)) << "a caller this daemon cannot name";
  EXPECT_TRUE(lone.alone(kStart + 4 + kQuiet));
}

TEST(LoneCallerTest, ShortMessageChangesNothing) {
  LoneCaller lone;
  lone.set_enabled(true);
  const std::vector<char> msg = request(FUSE_WRITE, 100);
  lone.note_request(msg.data(), sizeof(fuse_in_header) - 1, kStart);
  EXPECT_TRUE(lone.alone(kStart + 1));
}

// Following: only where enabled and allowed; a reader that read nothing for
// kStalledNs is stalled; a stall stops following for a back-off that
// doubles with each stall, and a run that ends without one halves it.
TEST(LoneCallerTest, FollowingOnlyWhereEnabledAndAllowed) {
  LoneCaller lone;
  lone.set_may_follow(true);
  EXPECT_FALSE(lone.may_follow(kStart)) << "disabled";
  lone.set_enabled(true);
  EXPECT_TRUE(lone.may_follow(kStart));
  lone.set_may_follow(false);
  EXPECT_FALSE(lone.may_follow(kStart));
}

TEST(LoneCallerTest, AReaderIsStalledWhenARequestWaitsAtTwoLooksWithNoReadBetween) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  EXPECT_FALSE(lone.following());
  EXPECT_FALSE(lone.follower_stalled(true));
  EXPECT_FALSE(lone.follower_stalled(true)) << "nobody follows";
  lone.note_followed_read(77, kStart);
  EXPECT_TRUE(lone.following());
  EXPECT_EQ(lone.follow_runs(), 1u);
  EXPECT_FALSE(lone.follower_stalled(false)) << "nothing waits";
  EXPECT_FALSE(lone.follower_stalled(true)) << "a request waits: seen once";
  lone.note_followed_read(77, kStart + 1);
  EXPECT_FALSE(lone.follower_stalled(true)) << "the reader read since: a new request, seen once";
  EXPECT_TRUE(lone.follower_stalled(true)) << "still waiting, nothing read";
  EXPECT_EQ(lone.follow_runs(), 1u) << "one run";
  EXPECT_EQ(lone.stop_stalled_follower(kStart + 2), 77u);
  EXPECT_EQ(lone.follow_stalls(), 1u);
  lone.note_followed_read(77, kStart + 3);
  EXPECT_FALSE(lone.follower_stalled(true)) << "a stop forgets what the look-out saw";
  EXPECT_FALSE(lone.follower_stalled(false));
  EXPECT_FALSE(lone.follower_stalled(true)) << "nothing waited at the look between";
}

TEST(LoneCallerTest, AnIdleReaderIsStoppedWithoutABackOff) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  EXPECT_EQ(lone.stop_idle_follower(kStart), 0u) << "nobody follows";
  lone.note_followed_read(77, kStart);
  EXPECT_EQ(lone.stop_idle_follower(kStart + LoneCaller::kIdleNs - 1), 0u) << "not idle long enough";
  EXPECT_EQ(lone.stop_idle_follower(kStart + LoneCaller::kIdleNs), 77u);
  EXPECT_FALSE(lone.following());
  EXPECT_EQ(lone.stops(), 0u) << "counted once put back";
  lone.put_back(true);
  EXPECT_EQ(lone.stops(), 1u) << "the follower sees it was put back";
  EXPECT_EQ(lone.follow_stalls(), 0u);
  EXPECT_TRUE(lone.may_follow(kStart + LoneCaller::kIdleNs));
  lone.note_followed_read(77, kStart + 2 * LoneCaller::kIdleNs);
  EXPECT_EQ(lone.stop_stalled_follower(kStart + 2 * LoneCaller::kIdleNs + 1), 77u);
  lone.put_back(true);
  EXPECT_EQ(lone.stops(), 2u) << "a stall is a stop too";
}

TEST(LoneCallerTest, ARunThatEndsIdleHalvesTheBackOff) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  constexpr uint64_t kMin = LoneCaller::kMinBackOffNs;
  uint64_t now = kStart;
  for (int stall = 0; stall < 2; ++stall) {  // back-off now 4 x the least
    lone.note_followed_read(77, now);
    EXPECT_EQ(lone.stop_stalled_follower(now + 1), 77u);
    now += 1 + LoneCaller::kMaxBackOffNs;
  }
  lone.note_followed_read(77, now);
  now += LoneCaller::kIdleNs;
  EXPECT_EQ(lone.stop_idle_follower(now), 77u);
  lone.note_followed_read(77, now);
  EXPECT_EQ(lone.stop_stalled_follower(now), 77u);
  EXPECT_FALSE(lone.may_follow(now + 2 * kMin - 1)) << "halved from 4 to 2 x the least";
  EXPECT_TRUE(lone.may_follow(now + 2 * kMin));
}

TEST(LoneCallerTest, AReaderThatCouldNotBePutBackTurnsFollowingOff) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  lone.note_followed_read(77, kStart);
  EXPECT_EQ(lone.stop_idle_follower(kStart + LoneCaller::kIdleNs), 77u);
  lone.put_back(false);
  EXPECT_EQ(lone.stops(), 0u) << "the reader still believes it is held, and puts itself back";
  EXPECT_FALSE(lone.may_follow(kStart + 2 * LoneCaller::kIdleNs));
}

TEST(LoneCallerTest, AReaderThatStopsFollowingEndsOnlyItsOwnRun) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  lone.note_followed_read(77, kStart);
  lone.note_followed_read(78, kStart + 1);  // another worker took the turn
  lone.note_not_following(77);
  EXPECT_TRUE(lone.following()) << "78 follows";
  lone.note_not_following(78);
  EXPECT_FALSE(lone.following());
}

TEST(LoneCallerTest, EachStallDoublesTheBackOffAndARunWithoutOneHalvesIt) {
  LoneCaller lone;
  lone.set_enabled(true);
  lone.set_may_follow(true);
  constexpr uint64_t kMin = LoneCaller::kMinBackOffNs;
  uint64_t now = kStart;
  lone.note_followed_read(77, now);
  now += LoneCaller::kStalledNs + 1;
  EXPECT_EQ(lone.stop_stalled_follower(now), 77u) << "the stalled reader, to put back";
  EXPECT_FALSE(lone.following());
  EXPECT_EQ(lone.stop_stalled_follower(now), 0u) << "stopped already";
  EXPECT_FALSE(lone.may_follow(now + kMin - 1));
  EXPECT_TRUE(lone.may_follow(now + kMin));

  now += kMin;
  lone.note_followed_read(78, now);
  now += LoneCaller::kStalledNs + 1;
  EXPECT_EQ(lone.stop_stalled_follower(now), 78u);
  EXPECT_FALSE(lone.may_follow(now + 2 * kMin - 1)) << "the second stall backs off twice as long";
  EXPECT_TRUE(lone.may_follow(now + 2 * kMin));

  // A run that ends without a stall halves the next back-off.
  now += 2 * kMin;
  lone.note_followed_read(79, now);
  lone.note_not_following(79);
  EXPECT_FALSE(lone.following());
  lone.note_followed_read(79, now);
  now += LoneCaller::kStalledNs + 1;
  EXPECT_EQ(lone.stop_stalled_follower(now), 79u);
  EXPECT_FALSE(lone.may_follow(now + 2 * kMin - 1)) << "four times the least, halved";
  EXPECT_TRUE(lone.may_follow(now + 2 * kMin));
}

TEST(LoneCallerTest, OneGuardAtATime) {
  LoneCaller lone;
  EXPECT_TRUE(lone.try_guard());
  EXPECT_FALSE(lone.try_guard());
  lone.end_guard();
  EXPECT_TRUE(lone.try_guard());
}

}  // namespace
}  // namespace peregrine::fs
