// Striping map: pieces cover a range exactly once, in order, never cross a
// stripe unit, land where RAID-0 puts them, and map back; growing it moves
// nothing; a reader racing a restripe's finish never sees a moved unit in
// its old place.
#include "peregrine/engine/stripe_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace peregrine {
namespace {

TEST(StripeMap, PlacesUnitsRoundRobin) {
  StripeMap map(4, 4096, 8192, 4096 * 100);
  StripePiece p = map.piece_at(5 * 4096 + 10, 100);
  EXPECT_EQ(p.member, 1u);                        // unit 5 -> member 5 mod 4
  EXPECT_EQ(p.member_offset, 8192u + 4096 + 10);  // row 5 div 4 = 1
  EXPECT_EQ(p.length, 100u);
  EXPECT_EQ(map.volume_size(), 4u * 4096 * 100);
}

// Online grow: the end rises, every piece of the old range stays where it
// was, and a copy taken before keeps its own end.
TEST(StripeMap, GrowRaisesTheEndAndMovesNoPiece) {
  StripeMap map(3, 8192, 1 << 20, 8192 * 10);
  const StripeMap before = map;
  map.grow(8192 * 25);
  EXPECT_EQ(map.volume_size(), 3u * 8192 * 25);
  EXPECT_EQ(map.member_data_size(), 8192u * 25);
  EXPECT_EQ(before.volume_size(), 3u * 8192 * 10);
  for (uint64_t off = 0; off < before.volume_size(); off += 4096) {
    StripePiece a = before.piece_at(off, 4096), b = map.piece_at(off, 4096);
    ASSERT_EQ(a.member, b.member) << off;
    ASSERT_EQ(a.member_offset, b.member_offset) << off;
  }
  // The new stripes follow on each member, after its old share.
  StripePiece first_new = map.piece_at(before.volume_size(), 1);
  EXPECT_EQ(first_new.member, 0u);
  EXPECT_EQ(first_new.member_offset, (1u << 20) + 8192u * 10);
}

TEST(StripeMap, RandomGeometriesCoverRangesExactlyOnceAndMapBack) {
  std::mt19937_64 rng(42);
  for (int g = 0; g < 200; ++g) {
    uint32_t members = 1 + rng() % 16;
    uint32_t unit = 4096u << (rng() % 9);  // 4 KiB .. 1 MiB
    uint64_t rows = 1 + rng() % 64;
    uint64_t data_start = (rng() % 4) * 4096;
    StripeMap map(members, unit, data_start, rows * unit);
    for (int r = 0; r < 50; ++r) {
      uint64_t off = rng() % map.volume_size();
      uint64_t len = 1 + rng() % (map.volume_size() - off);
      uint64_t expect_off = off;
      uint64_t count = 0;
      map.split(off, len, [&](const StripePiece& p) {
        ASSERT_EQ(p.volume_offset, expect_off) << "pieces out of order or overlapping";
        ASSERT_GT(p.length, 0u);
        // A piece never crosses a stripe-unit boundary.
        ASSERT_EQ(p.volume_offset / unit, (p.volume_offset + p.length - 1) / unit);
        ASSERT_LT(p.member, members);
        ASSERT_GE(p.member_offset, data_start);
        ASSERT_LE(p.member_offset + p.length, data_start + rows * unit);
        ASSERT_EQ(map.volume_offset(p.member, p.member_offset), p.volume_offset);
        expect_off += p.length;
        ++count;
      });
      ASSERT_EQ(expect_off, off + len) << "pieces do not cover the range";
      ASSERT_EQ(count, map.piece_count(off, len));
    }
  }
}

TEST(StripeMap, DistinctVolumeOffsetsNeverShareAMemberByte) {
  StripeMap map(3, 4096, 0, 4096 * 8);
  std::vector<std::vector<bool>> used(3, std::vector<bool>(4096 * 8 / 512, false));
  for (uint64_t off = 0; off < map.volume_size(); off += 512) {
    StripePiece p = map.piece_at(off, 512);
    ASSERT_FALSE(used[p.member][p.member_offset / 512]);
    used[p.member][p.member_offset / 512] = true;
  }
}

}  // namespace
}  // namespace peregrine

namespace peregrine {
namespace {

// member_spans (what a discard sends each member) covers exactly the member
// bytes that split() gives the range, as one contiguous span per member.
TEST(StripeMap, MemberSpansAreTheContiguousUnionOfEachMembersPieces) {
  std::mt19937_64 rng(7);
  for (int g = 0; g < 200; ++g) {
    uint32_t members = 1 + rng() % 8;
    uint32_t unit = 4096u << (rng() % 6);
    uint64_t rows = 1 + rng() % 32;
    StripeMap map(members, unit, 1 << 20, rows * unit);
    for (int r = 0; r < 50; ++r) {
      uint64_t off = rng() % map.volume_size();
      uint64_t len = 1 + rng() % (map.volume_size() - off);
      std::vector<uint64_t> lo(members, UINT64_MAX), hi(members, 0), bytes(members, 0);
      map.split(off, len, [&](const StripePiece& p) {
        lo[p.member] = std::min(lo[p.member], p.member_offset);
        hi[p.member] = std::max(hi[p.member], p.member_offset + p.length);
        bytes[p.member] += p.length;
      });
      std::vector<int> seen(members, 0);
      map.member_spans(off, len, [&](uint32_t m, uint64_t moff, uint64_t mlen) {
        ASSERT_LT(m, members);
        ++seen[m];
        EXPECT_EQ(moff, lo[m]);
        EXPECT_EQ(moff + mlen, hi[m]);
        EXPECT_EQ(mlen, bytes[m]) << "the pieces on a member are contiguous";
      });
      for (uint32_t m = 0; m < members; ++m) EXPECT_EQ(seen[m], bytes[m] > 0 ? 1 : 0) << "member " << m;
    }
  }
}

// Online restripe: units below the cursor take the layout over N + k
// members, the others keep theirs; the finish counts N + k members, and
// a restripe given up before any unit moved leaves the old layout.
TEST(StripeMapTest, RestripePlacesUnitsBelowTheCursorOverTheNewMembers) {
  constexpr uint32_t kUnit = 65536;
  StripeMap map(2, kUnit, 4096, 10 * kUnit);
  map.begin_restripe(3);
  EXPECT_TRUE(map.restriping());
  EXPECT_EQ(map.volume_size(), 20u * kUnit);
  for (uint64_t u = 0; u < 20; ++u) {
    const StripePiece p = map.piece_at(u * kUnit + 512, 4096);
    EXPECT_EQ(p.member, u % 2) << "cursor 0: unit " << u;
    EXPECT_EQ(p.member_offset, 4096 + u / 2 * kUnit + 512);
  }
  map.advance_restripe(7);
  EXPECT_EQ(map.restripe_cursor(), 7u);
  for (uint64_t u = 0; u < 20; ++u) {
    const StripePiece p = map.piece_at(u * kUnit, kUnit);
    const uint32_t n = u < 7 ? 3 : 2;
    EXPECT_EQ(p.member, u % n) << "unit " << u;
    EXPECT_EQ(p.member_offset, 4096 + u / n * kUnit) << "unit " << u;
  }
  // A range across the cursor is split by unit, each unit on its side.
  std::vector<StripePiece> pieces;
  map.split(6 * kUnit, 2 * kUnit, [&](const StripePiece& p) { pieces.push_back(p); });
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].member, 0u);  // unit 6 over three: member 0, row 2
  EXPECT_EQ(pieces[0].member_offset, 4096 + 2 * kUnit);
  EXPECT_EQ(pieces[1].member, 1u);  // unit 7 over two: member 1, row 3
  EXPECT_EQ(pieces[1].member_offset, 4096 + 3 * kUnit);
  map.advance_restripe(20);
  map.finish_restripe();
  EXPECT_FALSE(map.restriping());
  EXPECT_EQ(map.members(), 3u);
  EXPECT_EQ(map.volume_size(), 30u * kUnit);
  EXPECT_EQ(map.piece_at(29 * kUnit, kUnit).member, 2u);

  StripeMap other(2, kUnit, 0, 10 * kUnit);
  other.begin_restripe(4);
  other.cancel_restripe();
  EXPECT_FALSE(other.restriping());
  EXPECT_EQ(other.members(), 2u);
  EXPECT_EQ(other.piece_at(5 * kUnit, kUnit).member, 1u);
}

// The restripe's finish races the volume's IO (the fence lets requests
// through once no window is closed): every unit has moved, so a reader
// must place each one over the new members before, during and after the
// finish, whichever of its stores it sees. Thousands of finishes, a
// reader on another CPU looking up all the while.
TEST(StripeMapTest, AReaderRacingTheFinishAlwaysSeesMovedUnitsInTheirNewPlaces) {
  // On one CPU the reader never runs beside the finish: the test would pass
  // without testing anything.
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
  constexpr uint32_t kUnit = 4096;
  constexpr uint64_t kRows = 4;
  constexpr int kFinishes = 20000;
  std::vector<std::unique_ptr<StripeMap>> maps;
  for (int i = 0; i < kFinishes; ++i) {
    maps.push_back(std::make_unique<StripeMap>(2, kUnit, 0, kRows * kUnit));
    maps.back()->begin_restripe(3);
    maps.back()->advance_restripe(2 * kRows);  // every old unit moved
  }
  std::atomic<int> current{0}, seen{-1};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> misplaced{0}, lookups{0};
  std::thread reader([&] {
    uint64_t n = 0, bad = 0;
    while (!done.load(std::memory_order_relaxed)) {
      const int i = current.load(std::memory_order_acquire);
      const StripeMap& map = *maps[i];
      seen.store(i, std::memory_order_release);
      for (uint64_t u = 0; u < 2 * kRows; ++u, ++n) {
        const StripePiece p = map.piece_at(u * kUnit, kUnit);
        if (p.member != u % 3 || p.member_offset != u / 3 * kUnit) ++bad;
      }
    }
    lookups.store(n);
    misplaced.store(bad);
  });
  for (int i = 0; i < kFinishes; ++i) {
    current.store(i, std::memory_order_release);
    // The reader is at this map: the finish lands among its lookups.
    while (seen.load(std::memory_order_acquire) != i) std::this_thread::yield();
    maps[i]->finish_restripe();
  }
  done.store(true);
  reader.join();
  EXPECT_GE(lookups.load(), uint64_t{kFinishes});
  EXPECT_EQ(misplaced.load(), 0u) << "of " << lookups.load() << " lookups";
  for (const auto& m : maps) {
    EXPECT_FALSE(m->restriping());
    EXPECT_EQ(m->members(), 3u);
  }
}

}  // namespace
}  // namespace peregrine
