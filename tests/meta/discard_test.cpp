// Discard (TRIM) in the metadata layer: FITRIM and online discard hand the
// members only space that no durable record refers to, never space that a
// crash could give back to its owner, and never space an allocation has
// written meanwhile. The MemoryVolumeIo poisons what it is told to discard
// (kDiscardByte), so data that a discard should not have hit shows.
#include <sys/stat.h>

#include <cstring>

#include "meta_test_util.h"
#include "peregrine/util/aligned_buffer.h"

namespace peregrine::meta {
namespace {

using test::kMiB;
using test::mount_ok;
using test::new_volume;
using test::small_geometry;
constexpr uint64_t B = 4096;
const Cred kRoot{0, 0};

void fill(std::byte* p, Ino ino, uint64_t file_block) {
  const uint64_t w = (ino << 32) | file_block | 0x8000'0000'0000'0000ull;
  for (size_t i = 0; i < B; i += 8) std::memcpy(p + i, &w, 8);
}

// Creates /name with `len` bytes written as the FUSE layer writes them, and
// closes it. Returns its inode.
Ino make_file(Metadata& md, VolumeIo& io, const char* name, uint64_t len) {
  InodeAttr a;
  EXPECT_EQ(md.create(kRootIno, name, S_IFREG | 0644, kRoot, &a), 0);
  std::vector<WriteRange> w;
  EXPECT_EQ(md.prepare_write(a.ino, 0, len, &w), 0);
  for (const WriteRange& r : w) {
    peregrine::AlignedBuffer ab(r.len);
    for (uint64_t b = 0; b < r.len / B; ++b) fill(ab.data() + b * B, a.ino, r.file_off / B + b);
    EXPECT_EQ(io.write(r.vol_off, ab.span()), 0);
  }
  EXPECT_EQ(md.complete_write(a.ino, w, len), 0);
  EXPECT_EQ(md.release(a.ino), 0);
  return a.ino;
}

// Every block of the file holds what make_file wrote there.
::testing::AssertionResult file_intact(Metadata& md, VolumeIo& io, Ino ino, uint64_t len) {
  std::vector<Segment> segs;
  if (int rc = md.map_read(ino, 0, len, &segs); rc != 0) return ::testing::AssertionFailure() << "map_read " << rc;
  uint64_t data = 0;
  for (const Segment& s : segs) {
    if (s.kind != Segment::kData) return ::testing::AssertionFailure() << "a hole at " << s.file_off;
    peregrine::AlignedBuffer got(s.len), want(s.len);
    if (io.read(s.vol_off, got.span()) != 0) return ::testing::AssertionFailure() << "read failed";
    for (uint64_t b = 0; b < s.len / B; ++b) fill(want.data() + b * B, ino, s.file_off / B + b);
    for (uint64_t b = 0; b < s.len / B; ++b)
      if (std::memcmp(got.data() + b * B, want.data() + b * B, B) != 0)
        return ::testing::AssertionFailure()
               << "inode " << ino << " block " << s.file_off / B + b << " at volume offset " << s.vol_off + b * B
               << (got.data()[b * B] == MemoryVolumeIo::kDiscardByte ? " was discarded" : " holds other bytes");
    data += s.len;
  }
  if (data != len) return ::testing::AssertionFailure() << data << " bytes mapped of " << len;
  return ::testing::AssertionSuccess();
}

// The image a crash right now would leave: what was flushed.
std::unique_ptr<MemoryVolumeIo> crash_now(MemoryVolumeIo& io) {
  io.crash_after_writes(io.write_count());
  return io.crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
}

TEST(Fitrim, DiscardsFreeSpaceButNotSpaceFreedByRecordsNotYetDurable) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);
  Ino a = make_file(*md, *io, "a", 3 * kMiB);
  Ino b = make_file(*md, *io, "b", 2 * kMiB);
  ASSERT_EQ(md->sync(), 0);
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);  // journaled, not durable

  uint64_t trimmed = 0;
  ASSERT_EQ(md->trim(0, UINT64_MAX, 0, &trimmed), 0);
  EXPECT_EQ(trimmed, g.data_size - 5 * kMiB) << "everything free but a's and b's blocks";
  EXPECT_EQ(io->discarded_bytes(), trimmed);
  EXPECT_TRUE(file_intact(*md, *io, b, 2 * kMiB));

  // A crash now brings a back (its unlink was not durable): its data must be there.
  auto image = crash_now(*io);
  auto md2 = mount_ok(*image, g);
  InodeAttr attr;
  ASSERT_EQ(md2->lookup(kRootIno, "a", &attr), 0);
  EXPECT_TRUE(file_intact(*md2, *image, a, 3 * kMiB));
  EXPECT_TRUE(file_intact(*md2, *image, b, 2 * kMiB));
}

TEST(Fitrim, DiscardsSpaceOnceItsFreeingIsDurableAndRespectsRangeAndMinimum) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);
  make_file(*md, *io, "a", 3 * kMiB);
  Ino b = make_file(*md, *io, "b", 2 * kMiB);
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);
  ASSERT_EQ(md->sync(), 0);

  uint64_t trimmed = 0;
  // Nothing free is as large as the whole data area.
  ASSERT_EQ(md->trim(0, UINT64_MAX, g.data_size - B, &trimmed), 0);
  EXPECT_EQ(trimmed, 0u);
  // The first MiB of the data area only.
  ASSERT_EQ(md->trim(0, kMiB, 0, &trimmed), 0);
  EXPECT_LE(trimmed, kMiB);
  EXPECT_EQ(io->discarded_bytes(), trimmed);
  const uint64_t first = trimmed;
  ASSERT_EQ(md->trim(0, UINT64_MAX, 0, &trimmed), 0);
  EXPECT_EQ(trimmed, g.data_size - 2 * kMiB) << "all but b's blocks, a's included";
  EXPECT_EQ(io->discarded_bytes(), first + trimmed);
  EXPECT_TRUE(file_intact(*md, *io, b, 2 * kMiB));

  EXPECT_EQ(md->trim(g.data_size, kMiB, 0, &trimmed), -EINVAL);
  EXPECT_EQ(md->trim(0, 100, 0, &trimmed), -EINVAL);
  EXPECT_EQ(md->trim(0, UINT64_MAX, g.data_size + B, &trimmed), -EINVAL);
  const DiscardStats s = md->discard_stats();
  EXPECT_FALSE(s.online);
  EXPECT_EQ(s.fstrim_bytes, io->discarded_bytes());
  EXPECT_EQ(s.pending_bytes, 0u);
  // The free map is whole again after the trims.
  test::expect_space_consistent(md->dump(), md->free_map(), g);
}

TEST(Fitrim, RefusedOnAReadOnlyMount) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  {
    auto md = mount_ok(*io, g);
    ASSERT_TRUE(md->unmount());
  }
  Options o = test::test_options();
  o.read_only = true;
  auto md = mount_ok(*io, g, o);
  uint64_t trimmed = 0;
  EXPECT_EQ(md->trim(0, UINT64_MAX, 0, &trimmed), -EROFS);
  EXPECT_EQ(io->discarded_bytes(), 0u);
}

Options online() {
  Options o = test::test_options();
  o.discard = true;
  return o;
}

TEST(OnlineDiscard, DiscardsFreedSpaceOnlyOnceTheFreeingIsDurable) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g, online());
  Ino a = make_file(*md, *io, "a", 3 * kMiB);
  Ino b = make_file(*md, *io, "b", 2 * kMiB);
  ASSERT_EQ(md->sync(), 0);
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);
  md->wait_discards_idle();
  EXPECT_EQ(io->discarded_bytes(), 0u) << "a's unlink is not durable: its blocks are not discarded";

  auto image = crash_now(*io);
  {
    auto md2 = mount_ok(*image, g);
    EXPECT_TRUE(file_intact(*md2, *image, a, 3 * kMiB));
  }

  // A fresh volume, the same steps, then the unlink made durable.
  io = new_volume(g);
  md = mount_ok(*io, g, online());
  a = make_file(*md, *io, "a", 3 * kMiB);
  b = make_file(*md, *io, "b", 2 * kMiB);
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);
  ASSERT_EQ(md->sync(), 0);
  md->wait_discards_idle();
  EXPECT_EQ(io->discarded_bytes(), 3 * kMiB);
  EXPECT_EQ(md->discard_stats().online_bytes, 3 * kMiB);
  EXPECT_TRUE(md->discard_stats().online);
  EXPECT_TRUE(file_intact(*md, *io, b, 2 * kMiB));
  test::expect_space_consistent(md->dump(), md->free_map(), g);
  ASSERT_TRUE(md->unmount());
}

TEST(OnlineDiscard, UnmountDiscardsEverythingFreedBeforeIt) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g, online());
  Ino b = make_file(*md, *io, "b", 2 * kMiB);
  make_file(*md, *io, "a", 3 * kMiB);
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);  // made durable by the unmount's checkpoint
  ASSERT_TRUE(md->unmount());
  EXPECT_EQ(io->discarded_bytes(), 3 * kMiB);
  auto md2 = mount_ok(*io, g);
  EXPECT_TRUE(file_intact(*md2, *io, b, 2 * kMiB));
}

// The space freed by a delete is needed at once, while it waits for its
// discard: the allocation takes it (or waits for the discard), and no
// discard lands on the new file's data.
TEST(OnlineDiscard, SpaceAwaitingDiscardIsReusedWithoutLosingTheNewData) {
  Geometry g = small_geometry();
  for (int round = 0; round < 5; ++round) {
    auto io = new_volume(g);
    auto md = mount_ok(*io, g, online());
    const uint64_t big = g.data_size - 4 * kMiB;
    make_file(*md, *io, "big", big);
    ASSERT_EQ(md->unlink(kRootIno, "big"), 0);
    ASSERT_EQ(md->sync(), 0);  // now queued for discard, or being discarded
    Ino again = make_file(*md, *io, "again", big);
    md->wait_discards_idle();
    ASSERT_TRUE(file_intact(*md, *io, again, big)) << "round " << round;
    test::expect_space_consistent(md->dump(), md->free_map(), g);
    ASSERT_TRUE(md->unmount());
  }
}

}  // namespace
}  // namespace peregrine::meta
