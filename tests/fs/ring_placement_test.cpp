// RingPlacement (fuse.pin_rings = false): a ring thread is pinned to its
// queue's CPU after a run of rounds that each ran one request and answered
// it on the thread, and let go after consecutive rounds of several
// requests; a request answered by another thread (a drive thread's reply)
// and rounds of two or three move it neither way.
#include "transport/ring_placement.h"

#include <gtest/gtest.h>

namespace peregrine::fs {
namespace {

using Change = RingPlacement::Change;

// Feeds `n` light rounds; returns the change the last one made.
Change light_rounds(RingPlacement& p, uint32_t n) {
  Change last = Change::none;
  for (uint32_t i = 0; i < n; ++i) last = p.after_round(1, 1);
  return last;
}

TEST(RingPlacement, PinsAfterARunOfLightRoundsOnly) {
  RingPlacement p;
  EXPECT_EQ(light_rounds(p, RingPlacement::kLightRoundsToPin - 1), Change::none);
  EXPECT_FALSE(p.pinned());
  EXPECT_EQ(p.after_round(1, 1), Change::pin);
  EXPECT_TRUE(p.pinned());
  EXPECT_EQ(light_rounds(p, 3 * RingPlacement::kLightRoundsToPin), Change::none) << "pinned once";
}

TEST(RingPlacement, ConsecutiveHeavyRoundsLetGo) {
  RingPlacement p;
  light_rounds(p, RingPlacement::kLightRoundsToPin);
  ASSERT_TRUE(p.pinned());
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 0), Change::none) << "one heavy round is not enough";
  EXPECT_EQ(p.after_round(1, 1), Change::none);
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 2), Change::none) << "the light round reset the count";
  EXPECT_EQ(p.after_round(64, 10), Change::free);
  EXPECT_FALSE(p.pinned());
}

TEST(RingPlacement, RequestsAnsweredElsewhereAreNotLight) {
  RingPlacement p;
  for (uint32_t i = 0; i < 4 * RingPlacement::kLightRoundsToPin; ++i) EXPECT_EQ(p.after_round(1, 0), Change::none);
  EXPECT_FALSE(p.pinned());
}

TEST(RingPlacement, HeavyRoundRestartsTheLightCountButTwoOrThreeDoNot) {
  RingPlacement p;
  light_rounds(p, RingPlacement::kLightRoundsToPin - 1);
  EXPECT_EQ(p.after_round(RingPlacement::kHeavyRound, 0), Change::none);
  EXPECT_EQ(light_rounds(p, RingPlacement::kLightRoundsToPin - 1), Change::none);
  EXPECT_FALSE(p.pinned()) << "the heavy round started the count again";
  EXPECT_EQ(p.after_round(2, 2), Change::none);
  EXPECT_EQ(p.after_round(0, 0), Change::none);
  EXPECT_EQ(p.after_round(1, 1), Change::pin) << "rounds of 2 and empty wake-ups neither count nor reset";
}

}  // namespace
}  // namespace peregrine::fs
