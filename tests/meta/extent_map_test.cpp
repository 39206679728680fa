// ExtentMap: lookups with holes, insert/merge, remove/split, mark_written.
#include "peregrine/meta/extent_map.h"

#include <gtest/gtest.h>

namespace peregrine::meta {
namespace {

constexpr uint64_t B = 4096;

TEST(ExtentMap, LookupReportsHolesAndPieces) {
  ExtentMap m;
  m.insert(2 * B, 100 * B, 2 * B, true);
  std::vector<MapPiece> p;
  m.lookup(0, 6 * B, &p);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], (MapPiece{0, 2 * B, false, 0, false}));
  EXPECT_EQ(p[1], (MapPiece{2 * B, 2 * B, true, 100 * B, true}));
  EXPECT_EQ(p[2], (MapPiece{4 * B, 2 * B, false, 0, false}));
  p.clear();
  m.lookup(3 * B + 10, 100, &p);  // unaligned inside an extent
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].vol_off, 101 * B + 10);
}

TEST(ExtentMap, ContiguousSameStateMerges) {
  ExtentMap m;
  m.insert(0, 10 * B, B, false);
  m.insert(B, 11 * B, B, false);
  m.insert(2 * B, 50 * B, B, false);  // not volume-contiguous
  EXPECT_EQ(m.count(), 2u);
  EXPECT_EQ(m.allocated_bytes(), 3 * B);
}

TEST(ExtentMap, RemoveSplitsAndFrees) {
  ExtentMap m;
  m.insert(0, 10 * B, 8 * B, true);
  std::vector<VolRange> freed;
  m.remove(2 * B, 3 * B, &freed);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0], (VolRange{12 * B, 3 * B}));
  EXPECT_EQ(m.count(), 2u);
  EXPECT_EQ(m.allocated_bytes(), 5 * B);
  std::vector<MapPiece> p;
  m.lookup(5 * B, B, &p);
  EXPECT_EQ(p[0].vol_off, 15 * B);
}

TEST(ExtentMap, MarkWrittenOnlyWhereMappingMatches) {
  ExtentMap m;
  m.insert(0, 10 * B, 4 * B, false);
  EXPECT_EQ(m.mark_written(B, 11 * B, 2 * B), 2 * B);
  EXPECT_EQ(m.count(), 3u);  // u | w | u
  // A write whose mapping was replaced meanwhile changes nothing.
  EXPECT_EQ(m.mark_written(3 * B, 99 * B, B), 0u);
  EXPECT_EQ(m.mark_written(0, 10 * B, 4 * B), 2 * B);
  EXPECT_EQ(m.count(), 1u);  // all written again: merged
  EXPECT_TRUE(m.extents().begin()->second.written);
}

TEST(ExtentMap, InsertReplacesOverlap) {
  ExtentMap m;
  m.insert(0, 10 * B, 4 * B, true);
  std::vector<VolRange> replaced;
  m.insert(B, 20 * B, B, false, &replaced);
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0], (VolRange{11 * B, B}));
  EXPECT_EQ(m.count(), 3u);
  EXPECT_EQ(m.goal_for(B), 21 * B);
}

}  // namespace
}  // namespace peregrine::meta
