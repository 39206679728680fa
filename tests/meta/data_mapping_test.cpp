// Data mapping: holes, unwritten -> written, rewrites, truncate, fallocate,
// punch hole, zero range, SEEK_DATA/SEEK_HOLE, contiguity and striping.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;
constexpr uint64_t B = 4096;

class DataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io = new_volume(g);
    md = mount_ok(*io, g);
    ASSERT_NE(md, nullptr);
    InodeAttr a;
    ASSERT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &a), 0);
    f = a.ino;
  }
  // Allocates and completes a write of [off, off + len).
  std::vector<WriteRange> write(uint64_t off, uint64_t len) {
    std::vector<WriteRange> w;
    EXPECT_EQ(md->prepare_write(f, off, len, &w), 0);
    InodeAttr a;
    md->getattr(f, &a);
    EXPECT_EQ(md->complete_write(f, w, std::max(a.size, off + len)), 0);
    return w;
  }
  std::vector<Segment> read(uint64_t off, uint64_t len) {
    std::vector<Segment> s;
    EXPECT_EQ(md->map_read(f, off, len, &s), 0);
    return s;
  }
  // f takes the whole data area; *other: a new empty file.
  void fill_with_f(Ino* other) {
    std::vector<WriteRange> w;
    ASSERT_EQ(md->prepare_write(f, 0, g.data_size, &w), 0);
    ASSERT_EQ(md->complete_write(f, w, g.data_size), 0);
    ASSERT_EQ(free_blocks(), 0u);
    InodeAttr a;
    ASSERT_EQ(md->create(kRootIno, "g", 0644, Cred{}, &a), 0);
    *other = a.ino;
  }
  uint64_t free_blocks() {
    StatFs s;
    md->statfs(&s);
    return s.free_blocks;
  }
  Geometry g = small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  std::unique_ptr<Metadata> md;
  Ino f = 0;
};

TEST_F(DataTest, UnwrittenReadsAsZeroUntilCompleted) {
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(f, 100, 5000, &w), 0);  // blocks 0 and 1
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].file_off, 0u);
  EXPECT_EQ(w[0].len, 2 * B);
  EXPECT_FALSE(w[0].written);
  EXPECT_GE(w[0].vol_off, g.data_offset);
  // Size not changed yet: nothing to read.
  EXPECT_TRUE(read(0, 8192).empty());
  SetAttrIn s;
  s.valid = SetAttrIn::kSize;
  s.size = 2 * B;
  InodeAttr a;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  auto r = read(0, 2 * B);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, Segment::kZero);
  ASSERT_EQ(md->complete_write(f, w, 5100), 0);
  r = read(0, 2 * B);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], (Segment{0, w[0].vol_off, 2 * B, Segment::kData}));
  ASSERT_EQ(md->getattr(f, &a), 0);
  EXPECT_EQ(a.size, 2 * B);  // stays at the larger size
  EXPECT_EQ(a.blocks, 2 * B / 512);
}

TEST_F(DataTest, RewriteOfWrittenDataNeedsNoAllocation) {
  auto w1 = write(0, 4 * B);
  const uint64_t free_before = free_blocks();
  std::vector<WriteRange> w2;
  ASSERT_EQ(md->prepare_write(f, B, B, &w2), 0);
  ASSERT_EQ(w2.size(), 1u);
  EXPECT_TRUE(w2[0].written);
  EXPECT_EQ(w2[0].vol_off, w1[0].vol_off + B);
  EXPECT_EQ(free_blocks(), free_before);
}

// prepare_write says which writes only rewrite written blocks inside the
// file, and sets their times then: the fs layer skips complete_write for
// them. Anything that maps, marks or grows still needs it.
TEST_F(DataTest, PrepareTimesRewritesInsideTheFileAndOnlyThose) {
  write(0, 4 * B);
  InodeAttr before;
  ASSERT_EQ(md->getattr(f, &before), 0);
  std::vector<WriteRange> w;
  bool done = false;
  ASSERT_EQ(md->prepare_write(f, B, B, &w, &done), 0);
  EXPECT_TRUE(done) << "a rewrite of one written block inside the file";
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(w[0].written);
  InodeAttr after;
  ASSERT_EQ(md->getattr(f, &after), 0);
  EXPECT_GT(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(after.ctime_ns, after.mtime_ns);
  EXPECT_EQ(after.size, 4 * B);

  w.clear();
  ASSERT_EQ(md->prepare_write(f, 3 * B, 2 * B, &w, &done), 0);
  EXPECT_FALSE(done) << "a write past the end grows the file";
  w.clear();
  ASSERT_EQ(md->prepare_write(f, 8 * B, B, &w, &done), 0);
  EXPECT_FALSE(done) << "a write into a hole maps blocks";
  // Unwritten blocks inside the file (fallocate grew it).
  ASSERT_EQ(md->fallocate(f, 0, 0, 16 * B), 0);
  w.clear();
  ASSERT_EQ(md->prepare_write(f, 12 * B, B, &w, &done), 0);
  EXPECT_FALSE(done) << "a write over unwritten blocks marks them written";
  w.clear();
  ASSERT_EQ(md->prepare_write(f, 0, 4 * B, &w, &done), 0);
  EXPECT_TRUE(done);
  // Without the out-parameter nothing is timed early.
  ASSERT_EQ(md->getattr(f, &before), 0);
  w.clear();
  ASSERT_EQ(md->prepare_write(f, 0, B, &w), 0);
  ASSERT_EQ(md->getattr(f, &after), 0);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
}

// FUSE's writeback cache: the kernel keeps the file's mtime and ctime and
// sends them with setattr, so writes it writes back later (a clock tick
// later) must not stamp them; the size and the mapping still change.
TEST(DataTimes, WritesLeaveTheTimesToTheKernelWhenItStampsThem) {
  Geometry g = small_geometry();
  auto io = new_volume(g);
  Options o = test::test_options();
  o.kernel_stamps_writes = true;
  auto md = mount_ok(*io, g, o);
  ASSERT_NE(md, nullptr);
  InodeAttr a;
  ASSERT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &a), 0);
  for (uint64_t off : {uint64_t{0}, uint64_t{0}, B}) {  // a new block, a rewrite, an extension
    std::vector<WriteRange> w;
    bool rewrite_done = false;
    ASSERT_EQ(md->prepare_write(a.ino, off, B, &w, &rewrite_done), 0);
    if (!rewrite_done) {
      ASSERT_EQ(md->complete_write(a.ino, w, off + B), 0);
    }
    InodeAttr now;
    ASSERT_EQ(md->getattr(a.ino, &now), 0);
    EXPECT_EQ(now.mtime_ns, a.mtime_ns) << off;
    EXPECT_EQ(now.ctime_ns, a.ctime_ns) << off;
    EXPECT_EQ(now.size, std::max(off + B, B)) << off;
  }
}

TEST_F(DataTest, HolesAndSparseReads) {
  write(0, B);
  write(10 * B, B);
  auto r = read(0, 11 * B);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].kind, Segment::kData);
  EXPECT_EQ(r[1], (Segment{B, 0, 9 * B, Segment::kZero}));
  EXPECT_EQ(r[2].kind, Segment::kData);
  // Clipped to the size.
  r = read(10 * B, 100 * B);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].len, B);
  EXPECT_TRUE(read(11 * B, B).empty());
}

TEST_F(DataTest, SequentialWritesAreOneStripeAlignedExtent) {
  for (int i = 0; i < 16; ++i) write(i * 16 * B, 16 * B);  // 1 MiB in 64 KiB
  auto r = read(0, 1 << 20);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, Segment::kData);
  EXPECT_EQ(r[0].vol_off % g.stripe_width(), 0u);
}

TEST_F(DataTest, TruncateDownFreesAndUpLeavesHole) {
  write(0, 8 * B);
  const uint64_t free_full = free_blocks();
  SetAttrIn s;
  s.valid = SetAttrIn::kSize;
  s.size = 2 * B + 10;  // keeps 3 blocks
  InodeAttr a;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  EXPECT_EQ(a.size, 2 * B + 10);
  EXPECT_EQ(a.blocks, 3 * B / 512);
  EXPECT_EQ(free_blocks(), free_full + 5);
  s.size = 100 * B;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  auto r = read(0, 100 * B);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].kind, Segment::kData);
  EXPECT_EQ(r[0].len, 3 * B);
  EXPECT_EQ(r[1].kind, Segment::kZero);
  // Freed space becomes reusable once the truncate is durable.
  ASSERT_EQ(md->sync(), 0);
  std::map<uint64_t, uint64_t> fm = md->free_map();
  uint64_t total = 0;
  for (auto& [o, l] : fm) total += l;
  EXPECT_EQ(total / B, free_blocks());
}

TEST_F(DataTest, FallocateKeepSizePunchAndZeroRange) {
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 8 * B), 0);
  InodeAttr a;
  ASSERT_EQ(md->getattr(f, &a), 0);
  EXPECT_EQ(a.size, 0u);
  EXPECT_EQ(a.blocks, 8 * B / 512);
  ASSERT_EQ(md->fallocate(f, 0, 0, 8 * B), 0);
  ASSERT_EQ(md->getattr(f, &a), 0);
  EXPECT_EQ(a.size, 8 * B);
  auto r = read(0, 8 * B);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, Segment::kZero);  // allocated but unwritten
  write(0, 8 * B);
  EXPECT_EQ(md->fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, B), -EOPNOTSUPP);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, B + 1, 2 * B), 0);
  r = read(0, 8 * B);  // only block 2 is wholly inside [B+1, 3B+1)
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1], (Segment{2 * B, 0, B, Segment::kZero}));
  ASSERT_EQ(md->getattr(f, &a), 0);
  EXPECT_EQ(a.blocks, 7 * B / 512);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_ZERO_RANGE, 4 * B, 2 * B), 0);
  r = read(0, 8 * B);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[3], (Segment{4 * B, 0, 2 * B, Segment::kZero}));
  ASSERT_EQ(md->getattr(f, &a), 0);
  EXPECT_EQ(a.blocks, 7 * B / 512);
  EXPECT_EQ(md->fallocate(f, FALLOC_FL_COLLAPSE_RANGE, 0, B), -EOPNOTSUPP);
}

TEST_F(DataTest, SeekDataAndHole) {
  write(4 * B, 2 * B);
  SetAttrIn s;
  s.valid = SetAttrIn::kSize;
  s.size = 10 * B;
  InodeAttr a;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  uint64_t r = 0;
  ASSERT_EQ(md->seek(f, 0, SEEK_DATA, &r), 0);
  EXPECT_EQ(r, 4 * B);
  ASSERT_EQ(md->seek(f, 0, SEEK_HOLE, &r), 0);
  EXPECT_EQ(r, 0u);
  ASSERT_EQ(md->seek(f, 4 * B, SEEK_HOLE, &r), 0);
  EXPECT_EQ(r, 6 * B);
  EXPECT_EQ(md->seek(f, 6 * B, SEEK_DATA, &r), -ENXIO);
  ASSERT_EQ(md->seek(f, 7 * B, SEEK_HOLE, &r), 0);
  EXPECT_EQ(r, 7 * B);
  EXPECT_EQ(md->seek(f, 10 * B, SEEK_HOLE, &r), -ENXIO);
}

TEST_F(DataTest, CompleteAfterPunchDoesNotExposeNewMapping) {
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(f, 0, B, &w), 0);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, B), 0);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_KEEP_SIZE, 0, B), 0);  // remapped elsewhere
  ASSERT_EQ(md->complete_write(f, w, B), 0);                  // stale completion
  auto r = read(0, B);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, Segment::kZero);
}

TEST_F(DataTest, EnospcAndRecoveryAfterDelete) {
  Ino other = 0;
  ASSERT_NO_FATAL_FAILURE(fill_with_f(&other));
  std::vector<WriteRange> w2;
  EXPECT_EQ(md->prepare_write(other, 0, B, &w2), -ENOSPC);
  ASSERT_EQ(md->unlink(kRootIno, "f"), 0);
  ASSERT_EQ(md->release(f), 0);
  // The free is not durable yet; prepare_write commits and retries.
  ASSERT_EQ(md->prepare_write(other, 0, B, &w2), 0);
  EXPECT_EQ(w2.size(), 1u);
  EXPECT_EQ(md->release_waits(), 0u) << "no release was coming: nothing to wait for";
}

// A write to a full volume while a release is coming (the fs layer serves
// a RELEASE: the program closed and unlinked a file, the kernel sent it)
// waits for it, and takes the space the release frees.
TEST_F(DataTest, AnAllocationWaitsForAComingReleaseAndTakesTheSpaceItFrees) {
  Ino other = 0;
  ASSERT_NO_FATAL_FAILURE(fill_with_f(&other));
  ASSERT_EQ(md->unlink(kRootIno, "f"), 0);  // f is open: an orphan
  std::atomic<bool> done{false};
  int rc = 1;
  std::vector<WriteRange> w2;
  std::thread writer;
  {
    Metadata::ComingRelease coming(*md);
    writer = std::thread([&] {
      rc = md->prepare_write(other, 0, B, &w2);
      done.store(true);
    });
    // Released only once the writer waits for it, so that without the
    // wait it finds no space.
    while (md->release_waits() == 0 && !done.load()) std::this_thread::yield();
    ASSERT_EQ(md->release(f), 0);
  }
  writer.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(md->release_waits(), 1u);
  EXPECT_EQ(w2.size(), 1u);
}

// A coming release that frees nothing (or never ends) leaves the write
// with ENOSPC, after at most two waits of kReleaseWaitMs.
TEST_F(DataTest, AComingReleaseThatFreesNothingEndsInEnospc) {
  Ino other = 0;
  ASSERT_NO_FATAL_FAILURE(fill_with_f(&other));
  Metadata::ComingRelease coming(*md);
  std::vector<WriteRange> w2;
  EXPECT_EQ(md->prepare_write(other, 0, B, &w2), -ENOSPC);
  EXPECT_EQ(md->release_waits(), 2u);
}

TEST_F(DataTest, WrongTypes) {
  std::vector<Segment> s;
  EXPECT_EQ(md->map_read(kRootIno, 0, B, &s), -EISDIR);
  std::vector<WriteRange> w;
  EXPECT_EQ(md->prepare_write(12345, 0, B, &w), -ENOENT);
  EXPECT_EQ(md->prepare_write(f, uint64_t{1} << 60, B, &w), -EFBIG);
  EXPECT_EQ(md->fallocate(f, 0, 0, 0), -EINVAL);
  uint64_t r;
  EXPECT_EQ(md->seek(f, 0, SEEK_SET, &r), -EINVAL);
}

}  // namespace
}  // namespace peregrine::meta
