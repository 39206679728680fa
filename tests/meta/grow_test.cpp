// A volume whose data area grew (peregrine grow): a checkpoint written for
// a smaller data area mounts, the space past the old end is free and gets
// used, the next checkpoint records the new size, a dirty journal replays
// onto the larger area and fsck accepts it. A checkpoint written for a
// LARGER data area than the volume has is refused by mount and by fsck,
// which must not trim the extents past the end. Online: grow_data_area
// on a mounted Metadata.
#include "meta_test_util.h"
#include "peregrine/meta/checkpoint.h"
#include "peregrine/meta/fsck.h"

namespace peregrine::meta {
namespace {

using test::kMiB;
using test::mount_ok;
using test::small_geometry;

constexpr uint64_t kBlock = 4096;

// The same volume before and after growing: one MemoryVolumeIo large
// enough for both, as a grown member set would be.
struct Grown {
  Geometry small = small_geometry();
  Geometry large = [] {
    Geometry g = small_geometry();
    g.data_size *= 2;
    return g;
  }();
  MemoryVolumeIo io{large.data_offset + large.data_size};
};

// Writes `len` bytes of file `name` (a fresh file) and returns its ino.
Ino write_file(Metadata& md, const char* name, uint64_t len, std::vector<WriteRange>* ranges = nullptr) {
  InodeAttr a;
  EXPECT_EQ(md.create(kRootIno, name, 0644, Cred{}, &a), 0);
  std::vector<WriteRange> w;
  EXPECT_EQ(md.prepare_write(a.ino, 0, len, &w), 0);
  EXPECT_EQ(md.complete_write(a.ino, w, len), 0);
  if (ranges) *ranges = w;
  return a.ino;
}

// The volume ranges holding file `ino`, in file order.
std::vector<Segment> mapping(Metadata& md, Ino ino, uint64_t len) {
  std::vector<Segment> s;
  EXPECT_EQ(md.map_read(ino, 0, len, &s), 0);
  return s;
}

Ino lookup(Metadata& md, const char* name) {
  InodeAttr a;
  EXPECT_EQ(md.lookup(kRootIno, name, &a), 0) << name;
  return a.ino;
}

uint64_t checkpoint_data_size(VolumeIo& io, const Geometry& g) {
  auto layout = MetaLayout::compute(g, 0);
  EXPECT_TRUE(layout.has_value());
  SlotState slots[2];
  int best = newest_valid_checkpoint(io, *layout, slots);
  EXPECT_GE(best, 0);
  return best < 0 ? 0 : slots[best].header.data_size;
}

TEST(Grow, CheckpointOfTheSmallerAreaMountsWithTheNewSpaceFree) {
  Grown v;
  std::vector<Segment> before;
  {
    auto md = mount_ok(v.io, v.small);
    ASSERT_TRUE(md);
    Ino f = write_file(*md, "old", 8 * kMiB);
    before = mapping(*md, f, 8 * kMiB);
    ASSERT_TRUE(md->unmount().is_ok());
  }
  ASSERT_EQ(checkpoint_data_size(v.io, v.large), v.small.data_size);

  auto md = mount_ok(v.io, v.large);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->mount_report().grown_from, v.small.data_size);
  // Mount checkpointed at once: the checkpoint now records the new area.
  EXPECT_EQ(checkpoint_data_size(v.io, v.large), v.large.data_size);
  StatFs st;
  ASSERT_EQ(md->statfs(&st), 0);
  EXPECT_EQ(st.total_blocks, v.large.data_size / kBlock);
  EXPECT_EQ(st.free_blocks, (v.large.data_size - 8 * kMiB) / kBlock);
  // The old file is where it was.
  EXPECT_EQ(mapping(*md, lookup(*md, "old"), 8 * kMiB), before);

  // A file larger than the old area's free space fits, and part of it lies
  // past the old end.
  const uint64_t big = v.small.data_size;
  std::vector<WriteRange> w;
  Ino b = write_file(*md, "big", big, &w);
  uint64_t past_old_end = 0;
  for (const WriteRange& r : w) {
    EXPECT_GE(r.vol_off, v.large.data_offset);
    EXPECT_LE(r.vol_off + r.len, v.large.data_offset + v.large.data_size);
    const uint64_t old_end = v.small.data_offset + v.small.data_size;
    if (r.vol_off + r.len > old_end) past_old_end += r.vol_off + r.len - std::max(r.vol_off, old_end);
  }
  EXPECT_GT(past_old_end, 0u);
  const std::vector<Segment> big_map = mapping(*md, b, big);
  ASSERT_TRUE(md->unmount().is_ok());
  md.reset();

  auto again = mount_ok(v.io, v.large);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->mount_report().grown_from, 0u);
  EXPECT_EQ(mapping(*again, lookup(*again, "big"), big), big_map);
  ASSERT_TRUE(again->unmount().is_ok());
  again.reset();

  FsckReport r = run_fsck(v.io, v.large, FsckOptions{});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.problems, 0);
}

TEST(Grow, DirtyJournalReplaysOntoTheLargerArea) {
  Grown v;
  std::vector<Segment> before;
  {
    auto md = mount_ok(v.io, v.small);
    ASSERT_TRUE(md);
    ASSERT_TRUE(md->unmount().is_ok());  // the first checkpoint, for the small area
    md.reset();
    md = mount_ok(v.io, v.small);
    ASSERT_TRUE(md);
    Ino f = write_file(*md, "journaled", 4 * kMiB);
    ASSERT_EQ(md->fsync(f), 0);
    before = mapping(*md, f, 4 * kMiB);
    // No unmount: the change is only in the journal.
  }
  ASSERT_EQ(checkpoint_data_size(v.io, v.large), v.small.data_size);
  auto md = mount_ok(v.io, v.large);
  ASSERT_TRUE(md);
  EXPECT_GT(md->mount_report().replayed_records, 0u);
  EXPECT_EQ(md->mount_report().grown_from, v.small.data_size);
  EXPECT_EQ(mapping(*md, lookup(*md, "journaled"), 4 * kMiB), before);
  StatFs st;
  ASSERT_EQ(md->statfs(&st), 0);
  EXPECT_EQ(st.free_blocks, (v.large.data_size - 4 * kMiB) / kBlock);
  ASSERT_TRUE(md->unmount().is_ok());
  EXPECT_EQ(checkpoint_data_size(v.io, v.large), v.large.data_size);
}

TEST(Grow, CheckpointOfALargerAreaIsRefusedAndNotTrimmed) {
  Grown v;
  std::vector<Segment> before;
  {
    auto md = mount_ok(v.io, v.large);
    ASSERT_TRUE(md);
    // Fill past the small area's end.
    Ino f = write_file(*md, "wide", v.small.data_size + 8 * kMiB);
    before = mapping(*md, f, v.small.data_size + 8 * kMiB);
    ASSERT_TRUE(md->unmount().is_ok());
  }
  auto refused = Metadata::mount(v.io, v.small, test::test_options());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().errnum(), EUCLEAN);
  EXPECT_NE(refused.status().message().find(std::to_string(v.large.data_size)), std::string::npos)
      << refused.status().message();

  FsckOptions repair;
  repair.repair = true;
  FsckReport r = run_fsck(v.io, v.small, repair);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.fixed, 0);
  // Nothing was trimmed: at the right size the file is whole.
  auto md = mount_ok(v.io, v.large);
  ASSERT_TRUE(md);
  EXPECT_EQ(mapping(*md, lookup(*md, "wide"), v.small.data_size + 8 * kMiB), before);
}

// Online grow: the superblocks grew while mounted; grow_data_area makes the
// new space free at once and the unmount checkpoint records it.
TEST(Grow, OnlineGrowFreesTheNewSpaceAtOnce) {
  Grown v;
  auto md = mount_ok(v.io, v.small);
  ASSERT_TRUE(md);
  Ino f = write_file(*md, "old", 8 * kMiB);
  const std::vector<Segment> before = mapping(*md, f, 8 * kMiB);
  EXPECT_EQ(md->grow_data_area(v.small.data_size - kBlock), -EINVAL) << "shrinking";
  EXPECT_EQ(md->grow_data_area(v.large.data_size + kBlock), -EINVAL) << "past the end of the volume";
  ASSERT_EQ(md->grow_data_area(v.large.data_size), 0);
  EXPECT_EQ(md->data_size(), v.large.data_size);
  StatFs st;
  ASSERT_EQ(md->statfs(&st), 0);
  EXPECT_EQ(st.total_blocks, v.large.data_size / kBlock);
  EXPECT_EQ(st.free_blocks, (v.large.data_size - 8 * kMiB) / kBlock);
  const uint64_t big = v.small.data_size;  // more than was free before
  std::vector<WriteRange> w;
  Ino b = write_file(*md, "big", big, &w);
  uint64_t end = 0;
  for (const WriteRange& r : w) end = std::max(end, r.vol_off + r.len);
  EXPECT_GT(end, v.small.data_offset + v.small.data_size);
  const std::vector<Segment> big_map = mapping(*md, b, big);
  ASSERT_TRUE(md->unmount().is_ok());
  md.reset();
  EXPECT_EQ(checkpoint_data_size(v.io, v.large), v.large.data_size);

  auto again = mount_ok(v.io, v.large);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->mount_report().grown_from, 0u);
  EXPECT_EQ(mapping(*again, lookup(*again, "old"), 8 * kMiB), before);
  EXPECT_EQ(mapping(*again, lookup(*again, "big"), big), big_map);
  ASSERT_TRUE(again->unmount().is_ok());
  again.reset();
  FsckReport r = run_fsck(v.io, v.large, FsckOptions{});
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Grow, OnlineGrowOfAReadOnlyMountIsRefused) {
  Grown v;
  {
    auto md = mount_ok(v.io, v.small);
    ASSERT_TRUE(md);
    ASSERT_TRUE(md->unmount().is_ok());
  }
  Options o = test::test_options();
  o.read_only = true;
  auto md = mount_ok(v.io, v.small, o);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->grow_data_area(v.large.data_size), -EROFS);
  StatFs st;
  ASSERT_EQ(md->statfs(&st), 0);
  EXPECT_EQ(st.total_blocks, v.small.data_size / kBlock);
}

}  // namespace
}  // namespace peregrine::meta
