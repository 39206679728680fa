// ReadSpin: one worker spins at a time; the window grows when a sleeping
// worker was given a request within the limit and shrinks only after
// several waits in a row longer than it (read_spin.h).
#include "peregrine/fs/read_spin.h"

#include <gtest/gtest.h>

namespace peregrine::fs {
namespace {

constexpr uint64_t kLimit = 50'000;

// One missed spin whose worker was given a request `waited_ns` after it
// began to look.
void miss(ReadSpin& spin, uint64_t waited_ns) {
  ASSERT_TRUE(spin.try_begin());
  spin.missed();
  spin.adapt(waited_ns);
}

TEST(ReadSpinTest, OffWhenTheLimitIsZero) {
  ReadSpin spin;
  EXPECT_FALSE(spin.try_begin());
  spin.set_limit_ns(kLimit);
  EXPECT_TRUE(spin.try_begin());
}

TEST(ReadSpinTest, OneSpinnerAtATime) {
  ReadSpin spin;
  spin.set_limit_ns(kLimit);
  ASSERT_TRUE(spin.try_begin());
  EXPECT_FALSE(spin.try_begin()) << "a second worker must sleep while one spins";
  spin.found();
  ASSERT_TRUE(spin.try_begin());
  EXPECT_FALSE(spin.try_begin());
  spin.missed();
  EXPECT_TRUE(spin.try_begin());
  EXPECT_EQ(spin.requests_found(), 1u);
  EXPECT_EQ(spin.sleeps(), 1u);
}

TEST(ReadSpinTest, StartsAtZeroAndGrowsToTheLimitWhileRequestsComeSoon) {
  ReadSpin spin;
  spin.set_limit_ns(kLimit);
  EXPECT_EQ(spin.window_ns(), 0u);
  miss(spin, 30'000);
  EXPECT_EQ(spin.window_ns(), ReadSpin::kGrowStartNs);
  miss(spin, 30'000);
  EXPECT_EQ(spin.window_ns(), 2 * ReadSpin::kGrowStartNs);
  miss(spin, kLimit);
  EXPECT_EQ(spin.window_ns(), 4 * ReadSpin::kGrowStartNs);
  miss(spin, 1);
  EXPECT_EQ(spin.window_ns(), kLimit);
  miss(spin, 1);
  EXPECT_EQ(spin.window_ns(), kLimit) << "never past the limit";
}

TEST(ReadSpinTest, ShrinksOnlyAfterLongWaitsInARow) {
  ReadSpin spin;
  spin.set_limit_ns(kLimit);
  for (int i = 0; i < 4; ++i) miss(spin, 1);
  ASSERT_EQ(spin.window_ns(), kLimit);
  // A long pause between runs of close requests keeps the window.
  for (uint32_t i = 1; i < ReadSpin::kLongWaitsToShrink; ++i) miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), kLimit);
  miss(spin, 1);
  for (uint32_t i = 1; i < ReadSpin::kLongWaitsToShrink; ++i) miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), kLimit) << "a short wait starts the count again";
  // The next long wait in a row halves it, and each after, to none.
  miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), kLimit / 2);
  miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), kLimit / 4);
  miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), 0u) << "below the start of growth: no spinning";
  miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), 0u);
}

TEST(ReadSpinTest, AFoundRequestStartsTheCountOfLongWaitsAgain) {
  ReadSpin spin;
  spin.set_limit_ns(kLimit);
  for (int i = 0; i < 4; ++i) miss(spin, 1);
  for (uint32_t i = 1; i < ReadSpin::kLongWaitsToShrink; ++i) miss(spin, 10 * kLimit);
  ASSERT_TRUE(spin.try_begin());
  spin.found();
  miss(spin, 10 * kLimit);
  EXPECT_EQ(spin.window_ns(), kLimit);
}

}  // namespace
}  // namespace peregrine::fs
