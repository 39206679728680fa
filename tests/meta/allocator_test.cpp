// Allocator: stripe-aligned windows, contiguity for sequential writers,
// ENOSPC, deferred frees and reuse.
#include "peregrine/meta/allocator.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace peregrine::meta {
namespace {

constexpr uint64_t B = 4096;
constexpr uint64_t kBase = 1 << 20;  // data area starts at 1 MiB
constexpr uint64_t kStripe = 256 * 1024;

TEST(Allocator, FirstAllocationIsStripeAligned) {
  Allocator a(kBase + B, 64 << 20, kStripe, 1 << 20);  // area itself misaligned
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(7, 0, 8 * B, &r), 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].off % kStripe, 0u);
  EXPECT_EQ(r[0].len, 8 * B);
}

TEST(Allocator, SuccessiveWindowsStartOnSuccessiveMembers) {
  constexpr uint64_t kUnit = kStripe / 4;  // four members
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20, kUnit);
  int on_member[4] = {0, 0, 0, 0};
  for (Ino owner = 1; owner <= 40; ++owner) {
    // A small file: one allocation, then its last close gives the rest of
    // its window back.
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, 2 * B, &r), 0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].off % kUnit, 0u) << "window start off a stripe unit";
    const uint64_t member = r[0].off % kStripe / kUnit;
    EXPECT_EQ(member, (owner - 1) % 4) << "file " << owner;
    ++on_member[member];
    a.drop_reservation(owner);
  }
  for (int m = 0; m < 4; ++m) EXPECT_EQ(on_member[m], 10) << "member " << m;
}

TEST(Allocator, SequentialWritersStayContiguousWhenInterleaved) {
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20);
  std::vector<VolRange> f1, f2;
  uint64_t g1 = 0, g2 = 0;
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(a.allocate(1, g1, 16 * B, &f1), 0);
    g1 = f1.back().off + f1.back().len;
    ASSERT_EQ(a.allocate(2, g2, 16 * B, &f2), 0);
    g2 = f2.back().off + f2.back().len;
  }
  // 16 x 64 KiB = 1 MiB each, one range each despite interleaving.
  ASSERT_EQ(f1.size(), 1u);
  ASSERT_EQ(f2.size(), 1u);
  EXPECT_EQ(f1[0].len, 1u << 20);
  EXPECT_NE(f1[0].off, f2[0].off);
}

TEST(Allocator, EnospcThenFreeAndReuse) {
  Allocator a(kBase, 16 * B, B, 4 * B);
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, 16 * B, &r), 0);
  EXPECT_EQ(a.free_bytes(), 0u);
  std::vector<VolRange> none;
  EXPECT_EQ(a.allocate(2, 0, B, &none), -ENOSPC);
  EXPECT_TRUE(none.empty());
  a.free_deferred(5, {kBase + 4 * B, 2 * B});
  EXPECT_EQ(a.free_bytes(), 2 * B);  // counted free for statfs...
  EXPECT_EQ(a.allocate(2, 0, B, &none), -ENOSPC);  // ...but not reusable yet
  a.release_durable(4);
  EXPECT_EQ(a.allocate(2, 0, B, &none), -ENOSPC);
  a.release_durable(5);
  ASSERT_EQ(a.allocate(2, 0, 2 * B, &none), 0);
  EXPECT_EQ(none[0], (VolRange{kBase + 4 * B, 2 * B}));
}

TEST(Allocator, ReservationsAreReclaimedBeforeEnospc) {
  Allocator a(kBase, 64 * B, B, 32 * B);
  std::vector<VolRange> r1, r2, r3;
  ASSERT_EQ(a.allocate(1, 0, B, &r1), 0);  // reserves 31 more blocks for 1
  ASSERT_EQ(a.allocate(2, 0, B, &r2), 0);  // reserves 31 for 2
  ASSERT_EQ(a.allocate(3, 0, 40 * B, &r3), 0);
  uint64_t got = 0;
  for (auto& x : r3) got += x.len;
  EXPECT_EQ(got, 40 * B);
}

TEST(Allocator, MarkUsedDetectsOverlap) {
  Allocator a(kBase, 64 * B, B, B);
  EXPECT_TRUE(a.mark_used(kBase + 4 * B, 4 * B));
  EXPECT_FALSE(a.mark_used(kBase + 6 * B, 4 * B));
  EXPECT_FALSE(a.mark_used(kBase + 64 * B, B));  // outside the area
  EXPECT_EQ(a.free_bytes(), 60 * B);
}

TEST(Allocator, FreeMergesNeighbours) {
  Allocator a(kBase, 64 * B, B, B);
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, 64 * B, &r), 0);
  a.free_now({kBase, B});
  a.free_now({kBase + 2 * B, B});
  a.free_now({kBase + B, B});
  auto m = a.free_map();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.begin()->second, 3 * B);
}

}  // namespace
}  // namespace peregrine::meta
