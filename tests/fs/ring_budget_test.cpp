// plan_rings(): the io-uring transport's ring shape for the possible CPU
// counts of small and large machines, with the default settings (128
// entries of 1 MiB, fuse.ring_memory_mib 512), and the rules it keeps.
#include "transport/ring_budget.h"

#include <gtest/gtest.h>

namespace peregrine::fs {
namespace {

constexpr uint32_t kDepth = 128;
constexpr size_t kMiB = size_t{1} << 20;
constexpr uint64_t kBudget = uint64_t{512} << 20;

uint64_t reserved(unsigned cpus, uint32_t entries, size_t payload) {
  return uint64_t{cpus} * entries * (payload + 4096);
}

TEST(RingBudget, TwoCpusKeepTheConfiguredShape) {
  RingPlan p = plan_rings(2, kDepth, kMiB, kBudget);
  EXPECT_EQ(p.entries, 128u);
  EXPECT_EQ(p.payload_bytes, kMiB);
  EXPECT_EQ(p.reserved_bytes, reserved(2, 128, kMiB));
  EXPECT_TRUE(p.within_budget);
}

TEST(RingBudget, SixteenCpusHalveThePayloadBeforeGoingShallowerThan32) {
  // 1 MiB would leave 31 entries: below the depth of one QD 32 thread.
  RingPlan p = plan_rings(16, kDepth, kMiB, kBudget);
  EXPECT_EQ(p.payload_bytes, 512 * 1024u);
  EXPECT_EQ(p.entries, 63u);
  EXPECT_EQ(p.reserved_bytes, reserved(16, 63, 512 * 1024));
  EXPECT_LE(p.reserved_bytes, kBudget);
}

TEST(RingBudget, SixtyFourCpusFitTheBudgetAtTheSmallestPayload) {
  RingPlan p = plan_rings(64, kDepth, kMiB, kBudget);
  EXPECT_EQ(p.payload_bytes, 256 * 1024u);
  EXPECT_EQ(p.entries, 31u);
  EXPECT_LE(p.reserved_bytes, kBudget);  // the bound: <= 512 MiB at 64 CPUs
  EXPECT_TRUE(p.within_budget);
  // The configured shape would have reserved 8 GiB.
  EXPECT_GT(reserved(64, kDepth, kMiB), uint64_t{8} << 30);
}

TEST(RingBudget, TwoHundredFiftySixCpusStopAtTheSmallestShapeAndSaySo) {
  RingPlan p = plan_rings(256, kDepth, kMiB, kBudget);
  EXPECT_EQ(p.payload_bytes, 256 * 1024u);
  EXPECT_EQ(p.entries, 8u);
  EXPECT_EQ(p.reserved_bytes, reserved(256, 8, 256 * 1024));
  EXPECT_FALSE(p.within_budget);
}

TEST(RingBudget, ALargerBudgetBuysBackTheShape) {
  RingPlan p = plan_rings(64, kDepth, kMiB, uint64_t{16} << 30);
  EXPECT_EQ(p.entries, 128u);
  EXPECT_EQ(p.payload_bytes, kMiB);
}

TEST(RingBudget, NeverAboveTheConfiguredDepthOrPayload) {
  for (unsigned cpus : {1u, 2u, 3u, 4u, 8u, 16u, 64u, 256u, 1024u}) {
    RingPlan small = plan_rings(cpus, 4, 64 * 1024, kBudget);
    EXPECT_LE(small.entries, 4u) << cpus;
    EXPECT_LE(small.payload_bytes, 64 * 1024u) << cpus;
    RingPlan p = plan_rings(cpus, kDepth, kMiB, kBudget);
    EXPECT_LE(p.entries, kDepth) << cpus;
    EXPECT_GE(p.entries, 8u) << cpus;
    EXPECT_LE(p.payload_bytes, kMiB) << cpus;
    EXPECT_GE(p.payload_bytes, 256 * 1024u) << cpus;
    EXPECT_EQ(p.within_budget, p.reserved_bytes <= kBudget) << cpus;
  }
}

TEST(RingBudget, ConfiguredPayloadBelowTheSmallestIsKeptAndOnlyDepthShrinks) {
  // fuse.max_request_bytes = 64 KiB: 256 CPUs x 128 x 68 KiB = 2.1 GiB.
  RingPlan p = plan_rings(256, kDepth, 64 * 1024, kBudget);
  EXPECT_EQ(p.payload_bytes, 64 * 1024u);
  EXPECT_EQ(p.entries, 30u);  // 512 MiB / (256 x 68 KiB)
  EXPECT_TRUE(p.within_budget);
}

}  // namespace
}  // namespace peregrine::fs
