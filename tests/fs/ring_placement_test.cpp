// RingPlacement (fuse.pin_rings = false): a ring thread is pinned to its
// queue's CPU after a run of rounds in which it answered at least half of
// the requests it ran, and let go after consecutive rounds of several
// requests that other threads (drive threads) mostly answered, or of
// several requests while no other ring is busy (a lone caller at depth);
// one to three requests answered elsewhere, and empty wake-ups, move it
// neither way.
#include "transport/ring_placement.h"

#include <gtest/gtest.h>

namespace peregrine::fs {
namespace {

using Change = RingPlacement::Change;

// Feeds `n` rounds of `requests`, all answered on the thread; returns the
// change the last one made.
Change self_served_rounds(RingPlacement& p, uint32_t n, uint32_t requests = 1) {
  Change last = Change::none;
  for (uint32_t i = 0; i < n; ++i) last = p.after_round(requests, requests);
  return last;
}

TEST(RingPlacement, PinsAfterARunOfLoneSelfServedRounds) {
  RingPlacement p;
  EXPECT_EQ(self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin - 1), Change::none);
  EXPECT_FALSE(p.pinned());
  EXPECT_EQ(p.after_round(1, 1), Change::pin);
  EXPECT_TRUE(p.pinned());
  EXPECT_EQ(self_served_rounds(p, 3 * RingPlacement::kSelfServedRoundsToPin), Change::none) << "pinned once";
}

TEST(RingPlacement, PinsAtDepthWhenTheThreadAnswersItself) {
  // Memory members copied inline at QD 32: rounds of 32 the thread answers.
  RingPlacement p;
  EXPECT_EQ(self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin - 1, 32), Change::none);
  EXPECT_EQ(p.after_round(32, 31), Change::pin);
  EXPECT_TRUE(p.pinned());
}

TEST(RingPlacement, ALoneCallerAtDepthLetsGoAndIsNeverPinned) {
  // One fio job at QD 32 on memory members: rounds of 32 the thread
  // answers, no other ring busy. Beside the caller the two would take
  // turns on one CPU.
  RingPlacement p;
  self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin);
  ASSERT_TRUE(p.pinned());
  EXPECT_EQ(p.after_round(32, 32, true), Change::none) << "one round is not enough";
  EXPECT_EQ(p.after_round(32, 32, true), Change::free);
  EXPECT_FALSE(p.pinned());
  for (uint32_t i = 0; i < 4 * RingPlacement::kSelfServedRoundsToPin; ++i)
    EXPECT_EQ(p.after_round(32, 32, true), Change::none);
  EXPECT_FALSE(p.pinned());
  // The caller goes back to one request at a time: pinned again.
  for (uint32_t i = 0; i + 1 < RingPlacement::kSelfServedRoundsToPin; ++i)
    EXPECT_EQ(p.after_round(1, 1, true), Change::none);
  EXPECT_EQ(p.after_round(1, 1, true), Change::pin) << "alone says nothing about rounds of one to three";
}

TEST(RingPlacement, AtDepthBesideOtherBusyRingsItStaysPinned) {
  // Two fio jobs at QD 16, one per CPU: each ring beside its own caller.
  RingPlacement p;
  EXPECT_EQ(self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin, 16), Change::pin);
  for (uint32_t i = 0; i < 4 * RingPlacement::kElsewhereRoundsToFree; ++i)
    EXPECT_EQ(p.after_round(16, 16, false), Change::none);
  EXPECT_TRUE(p.pinned());
}

TEST(RingPlacement, HalfAnsweredHereCountsAsSelfServed) {
  RingPlacement p;
  for (uint32_t i = 0; i + 1 < RingPlacement::kSelfServedRoundsToPin; ++i) {
    EXPECT_EQ(p.after_round(8, 4), Change::none);
  }
  EXPECT_EQ(p.after_round(8, 4), Change::pin);
}

TEST(RingPlacement, ConsecutiveRoundsAnsweredElsewhereLetGo) {
  RingPlacement p;
  self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin);
  ASSERT_TRUE(p.pinned());
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 0), Change::none) << "one round is not enough";
  EXPECT_EQ(p.after_round(1, 1), Change::none);
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 1), Change::none) << "the self-served round reset the count";
  EXPECT_EQ(p.after_round(64, 10), Change::free);
  EXPECT_FALSE(p.pinned());
}

TEST(RingPlacement, LoneRequestsAnsweredElsewhereMoveNothing) {
  RingPlacement p;
  for (uint32_t i = 0; i < 4 * RingPlacement::kSelfServedRoundsToPin; ++i) EXPECT_EQ(p.after_round(1, 0), Change::none);
  EXPECT_FALSE(p.pinned());
  self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin);
  ASSERT_TRUE(p.pinned());
  for (uint32_t i = 0; i < 4 * RingPlacement::kElsewhereRoundsToFree; ++i) {
    EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound - 1, 0), Change::none);
  }
  EXPECT_TRUE(p.pinned()) << "rounds of up to three answered elsewhere do not let go";
}

TEST(RingPlacement, RoundAnsweredElsewhereRestartsTheCountButSmallOnesAndWakeUpsDoNot) {
  RingPlacement p;
  self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin - 1);
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 1), Change::none);
  EXPECT_EQ(self_served_rounds(p, RingPlacement::kSelfServedRoundsToPin - 1), Change::none);
  EXPECT_FALSE(p.pinned()) << "the round answered elsewhere started the count again";
  EXPECT_EQ(p.after_round(2, 0), Change::none);
  EXPECT_EQ(p.after_round(0, 0), Change::none);
  EXPECT_EQ(p.after_round(1, 1), Change::pin)
      << "small rounds answered elsewhere and empty wake-ups neither count nor reset";
}

}  // namespace
}  // namespace peregrine::fs
