// ShapeModel: the arithmetic every shaped device shares (ShapedDevice in
// peregrine, peregrine-shape-fs under the benchmark's peers).
#include "peregrine/backend/shape_model.h"

#include <gtest/gtest.h>

namespace peregrine {
namespace {

constexpr uint64_t kUs = 1000;

TEST(ShapeModel, AnIdleDriveCompletesAfterItsLatency) {
  ShapeModel m(ShapeParams{80 * kUs, 32, 0, 0});
  EXPECT_EQ(m.admit(1000 * kUs, 4096), 1080 * kUs);
  EXPECT_EQ(m.admit(5000 * kUs, 4096), 5080 * kUs);
}

TEST(ShapeModel, TheIopsCapSpacesStartsEvenly) {
  ShapeModel m(ShapeParams{80 * kUs, 32, 20000, 0});  // one start per 50 us
  uint64_t t = 1000 * kUs;
  EXPECT_EQ(m.admit(t, 4096), t + 80 * kUs);
  EXPECT_EQ(m.admit(t, 4096), t + 50 * kUs + 80 * kUs);
  EXPECT_EQ(m.admit(t, 4096), t + 100 * kUs + 80 * kUs);
  // After a pause the drive is idle again: no credit saved up, no debt.
  EXPECT_EQ(m.admit(t + 10000 * kUs, 4096), t + 10080 * kUs);
}

TEST(ShapeModel, LargeTransfersQueueBehindEachOtherAtTheBandwidth) {
  ShapeModel m(ShapeParams{80 * kUs, 32, 0, 1000000000});  // 1 GB/s: 1 MB takes 1 ms
  uint64_t t = 0;
  EXPECT_EQ(m.admit(t, 1000000), 1000 * kUs);      // the transfer, not the latency, decides
  EXPECT_EQ(m.admit(t, 1000000), 2000 * kUs);      // waits for the first transfer
  EXPECT_EQ(m.admit(t, 4096), 2000 * kUs + 4096);  // a small IO still queues behind them
}

TEST(ShapeModel, NoCapsMeansLatencyOnly) {
  ShapeModel m(ShapeParams{});
  EXPECT_EQ(m.admit(42, 1 << 20), 42u);
}

}  // namespace
}  // namespace peregrine
