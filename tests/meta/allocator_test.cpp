// Allocator: stripe-aligned windows, contiguity for sequential writers,
// ENOSPC, deferred frees and reuse, space taken out for discard.
#include "peregrine/meta/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
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
    // A file too large to be packed: one allocation, then its last close
    // gives the rest of its window back.
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, Allocator::kSmallFileBytes + B, &r), 0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].off % kUnit, 0u) << "window start off a stripe unit";
    const uint64_t member = r[0].off % kStripe / kUnit;
    EXPECT_EQ(member, (owner - 1) % 4) << "file " << owner;
    ++on_member[member];
    a.drop_reservation(owner);
  }
  for (int m = 0; m < 4; ++m) EXPECT_EQ(on_member[m], 10) << "member " << m;
}

TEST(Allocator, SmallFilesTakeTurnsOnTheMembersAndLieSideBySideOnEach) {
  constexpr uint64_t kUnit = kStripe / 4;  // four members
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20, kUnit);
  const uint64_t free_before = a.free_bytes();
  uint64_t used = 0;
  uint64_t member_end[4] = {0, 0, 0, 0};  // member offset after its last small file
  for (Ino owner = 1; owner <= 200; ++owner) {
    const uint64_t len = (owner % 5 + 1) * 3 * B;  // 12-60 KiB: units fill unevenly
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, len, &r), 0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].len, len);
    const uint64_t member = r[0].off % kStripe / kUnit;
    EXPECT_EQ(member, (owner - 1) % 4) << "file " << owner;
    EXPECT_EQ(r[0].off / kUnit, (r[0].off + len - 1) / kUnit) << "file " << owner << " crosses a unit";
    // Where the file lies on its member's drive: rows of one unit each.
    const uint64_t on_drive = r[0].off / kStripe * kUnit + r[0].off % kUnit;
    // Next to the previous small file on that drive, or at the start of the
    // next unit when the file did not fit in what was left.
    if (owner > 4) {
      EXPECT_TRUE(on_drive == member_end[member] ||
                  (on_drive % kUnit == 0 && on_drive > member_end[member] && on_drive - member_end[member] < len))
          << "file " << owner << " at drive offset " << on_drive << ", previous ended at " << member_end[member];
    }
    member_end[member] = on_drive + len;
    used += len;
    a.drop_reservation(owner);  // its last close: a packed file holds none
  }
  EXPECT_EQ(a.free_bytes(), free_before - used) << "the streams' reservations count as free";
}

// An online restripe from 4 to 6 members of the same unit: files made
// afterwards take turns over all six, as after a remount.
TEST(Allocator, AfterARestripeWindowsAndSmallFilesTakeTurnsOverTheNewMembers) {
  constexpr uint64_t kUnit = kStripe / 4;
  constexpr uint64_t kWide = 6 * kUnit;
  Allocator a(kBase, 60 * kWide, kStripe, 1 << 20, kUnit);
  std::vector<VolRange> before;
  ASSERT_EQ(a.allocate(1, 0, 3 * B, &before), 0);  // a stream unit of the old layout
  const uint64_t free_before = a.free_bytes();
  a.restripe(kWide);
  EXPECT_EQ(a.free_bytes(), free_before) << "the restripe neither takes nor loses space";
  int windows_on[6] = {}, small_on[6] = {};
  for (Ino owner = 10; owner < 22; ++owner) {
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, Allocator::kSmallFileBytes + B, &r), 0);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].off % kUnit, 0u);
    const uint64_t member = r[0].off % kWide / kUnit;
    EXPECT_EQ(member, (owner - 10) % 6) << "window of file " << owner;  // in turn from member 0
    ++windows_on[member];
    a.drop_reservation(owner);
  }
  uint64_t first = 0;
  for (Ino owner = 100; owner < 112; ++owner) {
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, 2 * B, &r), 0);
    ASSERT_EQ(r.size(), 1u);
    const uint64_t member = r[0].off % kWide / kUnit;
    if (owner == 100) first = member;  // the turns go on from the file packed before
    EXPECT_EQ(member, (first + owner - 100) % 6) << "small file " << owner;
    ++small_on[member];
  }
  for (int m = 0; m < 6; ++m) {
    EXPECT_EQ(windows_on[m], 2) << "windows on member " << m;
    EXPECT_EQ(small_on[m], 2) << "small files on member " << m;
  }
}

TEST(Allocator, StreamsUseFreedSpaceBeforeSpaceNeverWritten) {
  // On a sparse member file, space never written is space the host must
  // allocate: a tree unpacked, removed and unpacked again should land where
  // the first one was.
  constexpr uint64_t kUnit = kStripe / 4;
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20, kUnit);
  std::vector<VolRange> first;
  for (Ino owner = 1; owner <= 64; ++owner) ASSERT_EQ(a.allocate(owner, 0, 16 * B, &first), 0);
  uint64_t high = 0;
  for (const VolRange& r : first) high = std::max(high, r.off + r.len);
  for (const VolRange& r : first) a.free_now(r);
  for (Ino owner = 65; owner <= 128; ++owner) {
    std::vector<VolRange> r;
    ASSERT_EQ(a.allocate(owner, 0, 16 * B, &r), 0);
    EXPECT_LT(r[0].off, high) << "file " << owner << " went to space never written";
  }
}

TEST(Allocator, AnOutputHoldingEarlierRangesIsAppendedToAndKept) {
  constexpr uint64_t kUnit = kStripe / 4;
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20, kUnit);
  std::vector<VolRange> first;
  for (Ino owner = 1; owner <= 4; ++owner) ASSERT_EQ(a.allocate(owner, 0, 2 * B, &first), 0);
  // Owner 5's turn is member 0 again: packed right after owner 1, although
  // the vector it is given already holds owner 4's range (the API appends).
  std::vector<VolRange> out{first.back()};
  ASSERT_EQ(a.allocate(5, 0, 2 * B, &out), 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], first.back()) << "an earlier range changed";
  EXPECT_EQ(out[1], (VolRange{first[0].off + 2 * B, 2 * B}));
  // A refusal takes back only what the call allocated.
  const uint64_t free_before = a.free_bytes();
  EXPECT_EQ(a.allocate(6, 0, 128 << 20, &out), -ENOSPC);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(a.free_bytes(), free_before);
}

TEST(Allocator, TrimTakesTheStreamsUnusedUnitsToo) {
  constexpr uint64_t kUnit = kStripe / 4;
  Allocator a(kBase, 4 * kStripe, kStripe, kStripe, kUnit);  // 16 units
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, B, &r), 0);  // member 0's stream keeps the rest of its unit
  uint64_t cursor = 0;
  std::vector<VolRange> out;
  a.take_free_for_trim(&cursor, kBase + 4 * kStripe, 0, 4 * kStripe, 4 * kStripe, &out);
  uint64_t taken = 0;
  for (const VolRange& x : out) taken += x.len;
  EXPECT_EQ(taken, 4 * kStripe - B) << "everything but the one block in use";
  a.discard_done(out);
  std::vector<VolRange> next;
  ASSERT_EQ(a.allocate(2, 0, B, &next), 0);  // member 1's turn: a stream afresh
  EXPECT_EQ(next[0].off % kStripe / kUnit, 1u);
}

TEST(Allocator, APackedFileThatGrowsContinuesInAWindowOfItsOwn) {
  constexpr uint64_t kUnit = kStripe / 4;
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20, kUnit);
  std::vector<VolRange> f1, f2;
  ASSERT_EQ(a.allocate(1, 0, 4 * B, &f1), 0);
  ASSERT_EQ(a.allocate(2, 0, 4 * B, &f2), 0);
  ASSERT_EQ(a.allocate(5, 0, 4 * B, &f2), 0);  // member 2's stream
  std::vector<VolRange> more;
  ASSERT_EQ(a.allocate(1, f1[0].off + f1[0].len, 64 * B, &more), 0);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].off % kUnit, 0u) << "a window of its own";
  std::vector<VolRange> next;
  ASSERT_EQ(a.allocate(1, more[0].off + more[0].len, 16 * B, &next), 0);
  EXPECT_EQ(next[0].off, more[0].off + more[0].len) << "then sequential in it";
}

TEST(Allocator, StreamsGiveTheirSpaceBackBeforeEnospc) {
  // Two members of one 4-block unit each; 16 blocks in all.
  Allocator a(kBase, 16 * B, 8 * B, 4 * B, 4 * B);
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, B, &r), 0);  // member 0's stream keeps 3 blocks
  ASSERT_EQ(a.allocate(2, 0, B, &r), 0);  // member 1's keeps 3
  std::vector<VolRange> big;
  ASSERT_EQ(a.allocate(3, 0, 14 * B, &big), 0);
  uint64_t got = 0;
  for (const VolRange& x : big) got += x.len;
  EXPECT_EQ(got, 14 * B);
  EXPECT_EQ(a.free_bytes(), 0u);
}

TEST(Allocator, SequentialWritersStayContiguousWhenInterleaved) {
  Allocator a(kBase, 64 << 20, kStripe, 1 << 20);
  std::vector<VolRange> f1, f2;
  uint64_t g1 = 0, g2 = 0;
  for (int i = 0; i < 8; ++i) {  // writes larger than a small file's (never packed)
    ASSERT_EQ(a.allocate(1, g1, 32 * B, &f1), 0);
    g1 = f1.back().off + f1.back().len;
    ASSERT_EQ(a.allocate(2, g2, 32 * B, &f2), 0);
    g2 = f2.back().off + f2.back().len;
  }
  // 8 x 128 KiB = 1 MiB each, each one run despite interleaving (a call
  // appends its own ranges, never merged into an earlier call's).
  for (const std::vector<VolRange>* f : {&f1, &f2}) {
    ASSERT_EQ(f->size(), 8u);
    for (size_t i = 1; i < f->size(); ++i) EXPECT_EQ((*f)[i].off, (*f)[i - 1].off + (*f)[i - 1].len) << i;
  }
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
  EXPECT_EQ(a.free_bytes(), 2 * B);                // counted free for statfs...
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

// FITRIM's view: free extents of at least minlen, clipped to the range,
// in bounded pieces, out of the free map until given back.
TEST(Allocator, TrimTakesFreeExtentsInPiecesAndGivesThemBack) {
  Allocator a(kBase, 16 << 20, kStripe, 1 << 20);
  // Used: [kBase + 1 MiB, +1 MiB) and [kBase + 4 MiB, +4 KiB).
  ASSERT_TRUE(a.mark_used(kBase + (1 << 20), 1 << 20));
  ASSERT_TRUE(a.mark_used(kBase + (4 << 20), B));
  const uint64_t free_before = a.free_bytes();
  uint64_t cursor = kBase + B;  // the range starts one block in
  std::vector<VolRange> out, all;
  for (;;) {
    a.take_free_for_trim(&cursor, kBase + (8 << 20), 64 * 1024, 512 * 1024, 2 << 20, &out);
    if (out.empty()) break;
    for (const VolRange& r : out) {
      EXPECT_LE(r.len, 512u * 1024);
      EXPECT_GE(r.len, 64u * 1024);
      all.push_back(r);
    }
    EXPECT_EQ(a.free_bytes(), free_before) << "space being discarded counts as free";
    a.discard_done(out);
  }
  uint64_t total = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    total += all[i].len;
    if (i) {
      EXPECT_GE(all[i].off, all[i - 1].off + all[i - 1].len) << "in order, no overlap";
    }
  }
  // [kBase+4K, kBase+1M) + [kBase+2M, kBase+4M) + [kBase+4M+4K, kBase+8M).
  EXPECT_EQ(total, ((1u << 20) - B) + (2u << 20) + ((4u << 20) - B));
  EXPECT_EQ(a.free_map(),
            (std::map<uint64_t, uint64_t>{
                {kBase, 1 << 20}, {kBase + (2 << 20), 2 << 20}, {kBase + (4 << 20) + B, (12 << 20) - B}}));
}

TEST(Allocator, AllocationWaitsForNoRangeBeingDiscardedAndNeverGetsOne) {
  Allocator a(kBase, 4 << 20, kStripe, 1 << 20);
  uint64_t cursor = kBase;
  std::vector<VolRange> out;
  a.take_free_for_trim(&cursor, kBase + (3 << 20), 0, 8 << 20, 8 << 20, &out);
  ASSERT_EQ(out.size(), 1u);
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, 1 << 20, &r), 0);
  for (const VolRange& x : r) EXPECT_GE(x.off, kBase + (3 << 20)) << "allocated inside a range being discarded";
  a.discard_done(out);
}

TEST(Allocator, DurableFreesQueueForDiscardAndComeBackAfterIt) {
  Allocator a(kBase, 4 << 20, kStripe, 1 << 20);
  a.set_discard_on_free(true);
  std::vector<VolRange> r;
  ASSERT_EQ(a.allocate(1, 0, 1 << 20, &r), 0);
  a.drop_reservation(1);
  for (const VolRange& x : r) a.free_deferred(5, x);
  a.release_durable(4);
  EXPECT_EQ(a.discard_pending_bytes(), 0u) << "not durable yet";
  a.release_durable(5);
  EXPECT_EQ(a.discard_pending_bytes(), 1u << 20);
  EXPECT_EQ(a.free_bytes(), 4u << 20);
  std::vector<VolRange> batch;
  ASSERT_TRUE(a.wait_for_discards(&batch));
  ASSERT_EQ(batch.size(), 1u) << "neighbours merged";
  EXPECT_EQ(batch[0].len, 1u << 20);
  a.discard_done(batch);
  EXPECT_EQ(a.discard_pending_bytes(), 0u);
  EXPECT_EQ(a.free_map(), (std::map<uint64_t, uint64_t>{{kBase, 4 << 20}}));
  a.stop_discards();
  EXPECT_FALSE(a.wait_for_discards(&batch));
}

}  // namespace
}  // namespace peregrine::meta
