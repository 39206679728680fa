// Volume geometry: the RAID-0 map of docs/format.md.
#include "peregrine/volume/geometry.h"

#include <gtest/gtest.h>

namespace peregrine {
namespace {

TEST(GeometryTest, StripeSGoesToMemberSModNAtRowOffset) {
  VolumeGeometry g{3, 65536, 1 << 20, 10 * 65536};
  EXPECT_EQ(g.volume_size(), 30u * 65536);
  for (uint64_t s = 0; s < 30; ++s) {
    StripeLocation at = g.locate(s * 65536 + 100);
    EXPECT_EQ(at.member, s % 3) << s;
    EXPECT_EQ(at.offset, (1u << 20) + (s / 3) * 65536 + 100) << s;
  }
}

TEST(GeometryTest, EveryMemberByteIsHitExactlyOnce) {
  VolumeGeometry g{4, 4096, 8192, 8 * 4096};
  std::vector<int> hits(4 * 8, 0);
  for (uint64_t off = 0; off < g.volume_size(); off += 4096) {
    StripeLocation at = g.locate(off);
    ASSERT_LT(at.member, 4u);
    ASSERT_GE(at.offset, g.data_start);
    ++hits[at.member * 8 + (at.offset - g.data_start) / 4096];
  }
  for (int h : hits) EXPECT_EQ(h, 1);
}

}  // namespace
}  // namespace peregrine
