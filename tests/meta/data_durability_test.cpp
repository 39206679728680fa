// The no-stale-data rule end to end: a writer that does what the FUSE layer
// will do (prepare_write, data writes through the same VolumeIo,
// complete_write, fsync) is crashed after every volume write, under crash
// models that include a device reordering its unflushed writes. After
// recovery every block the metadata calls written must hold exactly the
// bytes the file wrote there (never the stale pattern, never another file's
// bytes), and every range fsync'd before the crash must be written.
#include <sys/stat.h>

#include <cstring>

#include "meta_test_util.h"
#include "peregrine/util/aligned_buffer.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;
using Policy = MemoryVolumeIo::CrashPolicy;
constexpr uint64_t B = 4096;

// Block contents for (file, file block): 8-byte words ino << 32 | block.
void fill(std::byte* p, Ino ino, uint64_t file_block) {
  const uint64_t w = (ino << 32) | file_block;
  for (size_t i = 0; i < B; i += 8) std::memcpy(p + i, &w, 8);
}

struct Durable {
  std::string name;
  uint64_t off, len;
};

struct Outcome {
  std::vector<Durable> must_be_written;
  uint64_t writes = 0;
};

Options opts() {
  Options o = test::test_options();
  o.journal_size = 64 * 1024;
  return o;
}

// Writes [off, off+len) of `ino` the way the FUSE layer will.
void write_file(Metadata& md, VolumeIo& io, Ino ino, uint64_t off, uint64_t len) {
  std::vector<WriteRange> w;
  ASSERT_EQ(md.prepare_write(ino, off, len, &w), 0);
  for (const WriteRange& r : w) {
    peregrine::AlignedBuffer ab(r.len);
    for (uint64_t b = 0; b < r.len / B; ++b) fill(ab.data() + b * B, ino, r.file_off / B + b);
    ASSERT_EQ(io.write(r.vol_off, ab.span()), 0);
  }
  InodeAttr a;
  md.getattr(ino, &a);
  ASSERT_EQ(md.complete_write(ino, w, std::max(a.size, off + len)), 0);
}

Outcome run(MemoryVolumeIo& io, const Geometry& g) {
  Outcome out;
  auto md = mount_ok(io, g, opts());
  if (!md) return out;
  InodeAttr f, gg, h;
  EXPECT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &f), 0);
  EXPECT_EQ(md->create(kRootIno, "g", 0644, Cred{}, &gg), 0);
  write_file(*md, io, f.ino, 0, 4 * B);
  write_file(*md, io, gg.ino, 0, 8 * B);
  if (md->fsync(f.ino) == 0 && !io.crashed()) out.must_be_written.push_back({"f", 0, 4 * B});
  write_file(*md, io, f.ino, 4 * B, 4 * B);
  // g goes away (not yet durable); h is written next: it must not get g's
  // space before the delete is durable, or a crash revives g over h's bytes.
  EXPECT_EQ(md->unlink(kRootIno, "g"), 0);
  EXPECT_EQ(md->release(gg.ino), 0);
  EXPECT_EQ(md->create(kRootIno, "h", 0644, Cred{}, &h), 0);
  write_file(*md, io, h.ino, 0, 8 * B);
  write_file(*md, io, f.ino, B, 2 * B);  // overwrite of written blocks
  if (md->fsync(h.ino) == 0 && !io.crashed()) {
    out.must_be_written.push_back({"h", 0, 8 * B});
    out.must_be_written.push_back({"f", 4 * B, 4 * B});
  }
  write_file(*md, io, h.ino, 8 * B, 4 * B);
  EXPECT_TRUE(md->unmount().is_ok());
  out.writes = io.write_count();
  return out;
}

void check(MemoryVolumeIo& img, const Geometry& g, const Outcome& o) {
  auto md = mount_ok(img, g, opts());
  ASSERT_NE(md, nullptr);
  for (const char* name : {"f", "g", "h"}) {
    InodeAttr a;
    if (md->lookup(kRootIno, name, &a) != 0) continue;
    std::vector<Segment> segs;
    ASSERT_EQ(md->map_read(a.ino, 0, a.size, &segs), 0);
    for (const Segment& s : segs) {
      if (s.kind != Segment::kData) continue;
      peregrine::AlignedBuffer got(s.len);
      ASSERT_EQ(img.read(s.vol_off, got.span()), 0);
      for (uint64_t b = 0; b < s.len / B; ++b) {
        std::byte want[B];
        fill(want, a.ino, s.file_off / B + b);
        ASSERT_EQ(std::memcmp(got.data() + b * B, want, B), 0)
            << name << " block " << s.file_off / B + b << " is marked written but holds other bytes";
      }
    }
  }
  for (const Durable& d : o.must_be_written) {
    InodeAttr a;
    ASSERT_EQ(md->lookup(kRootIno, d.name, &a), 0) << d.name;
    std::vector<Segment> segs;
    ASSERT_EQ(md->map_read(a.ino, d.off, d.len, &segs), 0);
    ASSERT_EQ(segs.size(), 1u) << d.name << " fsync'd range not entirely written";
    EXPECT_EQ(segs[0].kind, Segment::kData) << d.name;
  }
  test::expect_space_consistent(md->dump(), md->free_map(), g);
}

TEST(DataDurability, WrittenBlocksNeverShowStaleBytesAtAnyCrashPoint) {
  const Geometry g = small_geometry();
  // Stale bytes everywhere the allocator will hand out space.
  std::vector<std::byte> stale(4 << 20, std::byte{0xEE});
  auto clean = new_volume(g);
  clean->poke(g.data_offset, stale);
  const Outcome full = run(*clean, g);
  ASSERT_GT(full.writes, 10u);
  constexpr int kModes = 10;  // all landed, unflushed lost, 8 reorderings
  int checked = 0;
  for (uint64_t k = 0; k <= full.writes; ++k) {
    for (int mode = 0; mode < kModes; ++mode) {
      SCOPED_TRACE("crash after write " + std::to_string(k) + " mode " + std::to_string(mode));
      auto io = new_volume(g);
      io->poke(g.data_offset, stale);
      io->crash_after_writes(k);
      const Outcome o = run(*io, g);
      const Policy p = mode == 0 ? Policy::kAllLanded : mode == 1 ? Policy::kUnflushedLost : Policy::kRandomUnflushed;
      auto img = io->crash_image(p, static_cast<uint64_t>(mode));
      check(*img, g, o);
      ++checked;
    }
  }
  EXPECT_EQ(checked, kModes * static_cast<int>(full.writes + 1));
}

// A shrink zeroes the tail of the last block it keeps in place, after its
// record (fs zero_block_tail: a data write the journal does not know of);
// a truncate or fallocate that grows the file again then reaches over that
// tail. Whatever the crash point, and with the device keeping any subset of
// its unflushed writes, an image in which the grown size is durable must
// read the tail as zeros, never as the bytes from before the shrink. The
// commit after the grow is the background committer's (sync: no flush of
// the daemon's before it), so only the batch itself can order them.
enum class Grow { kTruncate, kFallocate };
constexpr uint64_t kShrunk = B + 10;
constexpr uint64_t kGrown = 3 * B;

uint64_t shrink_then_grow(MemoryVolumeIo& io, const Geometry& g, Grow how) {
  auto md = mount_ok(io, g, opts());
  if (!md) return 0;
  InodeAttr f;
  EXPECT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &f), 0);
  write_file(*md, io, f.ino, 0, 2 * B);
  EXPECT_EQ(md->sync(), 0);
  SetAttrIn in;
  in.valid = SetAttrIn::kSize;
  in.size = kShrunk;
  InodeAttr out;
  EXPECT_EQ(md->setattr(f.ino, in, &out), 0);
  // zero_block_tail's write, as the fs layer makes it.
  std::vector<Segment> segs;
  EXPECT_EQ(md->map_read(f.ino, B, kShrunk - B, &segs), 0);
  if (segs.size() == 1 && segs[0].kind == Segment::kData) {
    peregrine::AlignedBuffer block(B);
    const uint64_t vol_block = segs[0].vol_off - (segs[0].file_off - B);
    EXPECT_EQ(io.read(vol_block, block.span()), 0);
    std::memset(block.data() + (kShrunk - B), 0, B - (kShrunk - B));
    EXPECT_EQ(io.write(vol_block, block.span()), 0);
  } else {
    ADD_FAILURE() << "the kept last block is not mapped";
  }
  if (how == Grow::kTruncate) {
    in.size = kGrown;
    EXPECT_EQ(md->setattr(f.ino, in, &out), 0);
  } else {
    EXPECT_EQ(md->fallocate(f.ino, 0, 0, kGrown), 0);
  }
  md->sync();  // fails once the crash point has passed
  md->unmount();
  return io.write_count();
}

void expect_grown_tail_zero(MemoryVolumeIo& img, const Geometry& g) {
  auto md = mount_ok(img, g, opts());
  ASSERT_NE(md, nullptr);
  InodeAttr a;
  if (md->lookup(kRootIno, "f", &a) != 0 || a.size <= 2 * B) return;  // before the grow, or the shrink
  ASSERT_EQ(a.size, kGrown);
  std::vector<Segment> segs;
  ASSERT_EQ(md->map_read(a.ino, B, B, &segs), 0);
  std::string got(B, '\0');
  for (const Segment& s : segs) {
    if (s.kind != Segment::kData) continue;
    peregrine::AlignedBuffer buf(s.len);
    ASSERT_EQ(img.read(s.vol_off, buf.span()), 0);
    std::memcpy(got.data() + (s.file_off - B), buf.data(), s.len);
  }
  std::byte want_head[B];
  fill(want_head, a.ino, 1);
  EXPECT_EQ(std::memcmp(got.data(), want_head, kShrunk - B), 0) << "the bytes the shrink kept";
  EXPECT_EQ(got.find_first_not_of('\0', kShrunk - B), std::string::npos)
      << "the grown size is durable, but the tail the shrink zeroed holds older bytes";
}

TEST(DataDurability, ASizeGrownOverAShrunkTailReadsItsZerosAtAnyCrashPoint) {
  const Geometry g = small_geometry();
  for (Grow how : {Grow::kTruncate, Grow::kFallocate}) {
    auto clean = new_volume(g);
    const uint64_t writes = shrink_then_grow(*clean, g, how);
    ASSERT_GT(writes, 4u);
    constexpr int kModes = 18;  // all landed, unflushed lost, 16 reorderings
    for (uint64_t k = 0; k <= writes; ++k) {
      for (int mode = 0; mode < kModes; ++mode) {
        SCOPED_TRACE(std::string(how == Grow::kTruncate ? "truncate" : "fallocate") + ": crash after write " +
                     std::to_string(k) + " mode " + std::to_string(mode));
        auto io = new_volume(g);
        io->crash_after_writes(k);
        shrink_then_grow(*io, g, how);
        const Policy p = mode == 0 ? Policy::kAllLanded : mode == 1 ? Policy::kUnflushedLost : Policy::kRandomUnflushed;
        auto img = io->crash_image(p, static_cast<uint64_t>(mode));
        expect_grown_tail_zero(*img, g);
        if (HasFailure()) return;
      }
    }
  }
}

// Rewrites of written blocks defer their mtime/ctime record (at most one
// per file per commit interval); fsync and sync must still make the newest
// timestamps durable, and without them a crash keeps the older ones.
class DeferredTimes : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o = opts();
    o.commit_interval_ms = 60000;  // the window; the test clock stays inside it
    io_ = new_volume(g_);
    md_ = mount_ok(*io_, g_, o);
    ASSERT_NE(md_, nullptr);
    InodeAttr a;
    ASSERT_EQ(md_->create(kRootIno, "f", 0644, Cred{}, &a), 0);
    ino_ = a.ino;
    write_file(*md_, *io_, ino_, 0, 2 * B);  // allocates: journaled
    ASSERT_EQ(md_->sync(), 0);
    ASSERT_EQ(md_->getattr(ino_, &a), 0);
    logged_mtime_ = a.mtime_ns;
    write_file(*md_, *io_, ino_, 0, B);  // a rewrite: deferred
    ASSERT_EQ(md_->getattr(ino_, &a), 0);
    newest_mtime_ = a.mtime_ns;
    ASSERT_GT(newest_mtime_, logged_mtime_) << "the rewrite must update mtime in memory at once";
  }
  InodeAttr after_crash() {
    auto img = io_->crash_image(Policy::kUnflushedLost);
    md_.reset();
    auto md = mount_ok(*img, g_, opts());
    InodeAttr a;
    EXPECT_EQ(md->getattr(ino_, &a), 0);
    return a;
  }
  const Geometry g_ = small_geometry();
  std::unique_ptr<MemoryVolumeIo> io_;
  std::unique_ptr<Metadata> md_;
  Ino ino_ = 0;
  int64_t logged_mtime_ = 0;
  int64_t newest_mtime_ = 0;
};

TEST_F(DeferredTimes, FsyncMakesTheNewestTimesDurable) {
  ASSERT_EQ(md_->fsync(ino_), 0);
  InodeAttr a = after_crash();
  EXPECT_EQ(a.mtime_ns, newest_mtime_);
  EXPECT_EQ(a.ctime_ns, newest_mtime_);
  EXPECT_EQ(a.size, 2 * B);
}

TEST_F(DeferredTimes, SyncMakesTheNewestTimesDurable) {
  ASSERT_EQ(md_->sync(), 0);
  EXPECT_EQ(after_crash().mtime_ns, newest_mtime_);
}

TEST_F(DeferredTimes, WithoutFsyncACrashKeepsTheLastDurableTimes) {
  InodeAttr a = after_crash();
  EXPECT_EQ(a.mtime_ns, logged_mtime_);
  EXPECT_EQ(a.size, 2 * B);
}

// A rewrite whose times prepare_write set (the fs layer's fast path) is
// deferred like one completed: fsync makes it durable, a crash before
// does not.
TEST_F(DeferredTimes, RewriteTimedAtPrepareIsDeferredAndFsyncKeepsIt) {
  std::vector<WriteRange> w;
  bool done = false;
  ASSERT_EQ(md_->prepare_write(ino_, B, B, &w, &done), 0);
  ASSERT_TRUE(done);
  InodeAttr a;
  ASSERT_EQ(md_->getattr(ino_, &a), 0);
  ASSERT_GT(a.mtime_ns, newest_mtime_);
  const int64_t prepared = a.mtime_ns;
  ASSERT_EQ(md_->fsync(ino_), 0);
  a = after_crash();
  EXPECT_EQ(a.mtime_ns, prepared);
  EXPECT_EQ(a.size, 2 * B);
}

TEST_F(DeferredTimes, RewriteTimedAtPrepareIsLostByACrashWithoutFsync) {
  std::vector<WriteRange> w;
  bool done = false;
  ASSERT_EQ(md_->prepare_write(ino_, 0, 2 * B, &w, &done), 0);
  ASSERT_TRUE(done);
  EXPECT_EQ(after_crash().mtime_ns, logged_mtime_);
}

// fdatasync: what reading the data needs (sizes, extents) is made durable,
// times alone are not (ext4's fdatasync skips a times-only change too).
TEST_F(DeferredTimes, FdatasyncLeavesTheTimesOfARewriteForTheNextCommit) {
  ASSERT_EQ(md_->fsync(ino_, /*data_only=*/true), 0);
  InodeAttr a = after_crash();
  EXPECT_EQ(a.mtime_ns, logged_mtime_);
  EXPECT_EQ(a.size, 2 * B);
}

TEST_F(DeferredTimes, FdatasyncMakesAGrowthDurable) {
  write_file(*md_, *io_, ino_, 2 * B, B);  // allocates and grows: journaled
  ASSERT_EQ(md_->fsync(ino_, /*data_only=*/true), 0);
  EXPECT_EQ(after_crash().size, 3 * B);
}

// The kernel's flush of the times it stamped (mtime and ctime alone, with
// the writer's handle) is deferred as a rewrite's times are: fdatasync
// leaves it for the next commit, fsync makes it durable. The same change
// from a user (utimensat: no handle) is journaled, so an fdatasync that
// follows makes it durable with everything before it.
SetAttrIn set_times(int64_t mtime_ns, bool stamped) {
  SetAttrIn in;
  in.valid = SetAttrIn::kMtime | SetAttrIn::kCtime;
  in.mtime_ns = in.ctime_ns = mtime_ns;
  in.stamped_write_times = stamped;
  return in;
}

TEST_F(DeferredTimes, TheKernelsStampedTimesAreLeftByFdatasync) {
  InodeAttr a;
  ASSERT_EQ(md_->setattr(ino_, set_times(newest_mtime_ + 1000, true), &a), 0);
  EXPECT_EQ(a.mtime_ns, newest_mtime_ + 1000) << "the reply carries the new times";
  ASSERT_EQ(md_->getattr(ino_, &a), 0);
  EXPECT_EQ(a.ctime_ns, newest_mtime_ + 1000);
  ASSERT_EQ(md_->fsync(ino_, /*data_only=*/true), 0);
  EXPECT_EQ(after_crash().mtime_ns, logged_mtime_);
}

TEST_F(DeferredTimes, TheKernelsStampedTimesAreMadeDurableByFsync) {
  InodeAttr a;
  ASSERT_EQ(md_->setattr(ino_, set_times(newest_mtime_ + 1000, true), &a), 0);
  ASSERT_EQ(md_->fsync(ino_), 0);
  a = after_crash();
  EXPECT_EQ(a.mtime_ns, newest_mtime_ + 1000);
  EXPECT_EQ(a.ctime_ns, newest_mtime_ + 1000);
}

TEST_F(DeferredTimes, AUsersTimesAreJournaledAtOnce) {
  InodeAttr a;
  ASSERT_EQ(md_->setattr(ino_, set_times(newest_mtime_ + 1000, false), &a), 0);
  ASSERT_EQ(md_->fsync(ino_, /*data_only=*/true), 0);
  EXPECT_EQ(after_crash().mtime_ns, newest_mtime_ + 1000);
}

// With the kernel's writeback cache the kernel stamps the times of cached
// writes (kernel_stamps_writes); a direct write's times are the daemon's.
TEST(KernelStampedWrites, OnlyPageCacheWritebacksLeaveTheTimesAlone) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  Options o = opts();
  o.kernel_stamps_writes = true;
  auto md = mount_ok(*io, g, o);
  ASSERT_NE(md, nullptr);
  InodeAttr a;
  ASSERT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &a), 0);
  const int64_t created = a.mtime_ns;
  for (bool kernel_stamped : {true, false}) {
    std::vector<WriteRange> w;
    ASSERT_EQ(md->prepare_write(a.ino, 0, B, &w, nullptr, nullptr, kernel_stamped), 0);
    ASSERT_EQ(md->complete_write(a.ino, w, B, kernel_stamped), 0);
    InodeAttr now;
    ASSERT_EQ(md->getattr(a.ino, &now), 0);
    if (kernel_stamped) {
      EXPECT_EQ(now.mtime_ns, created) << "a page-cache writeback stamped the times";
    } else {
      EXPECT_GE(now.mtime_ns, created);
      EXPECT_EQ(now.ctime_ns, now.mtime_ns);
      EXPECT_NE(now.mtime_ns, created) << "a direct write left the times alone";
    }
  }
}

TEST_F(DeferredTimes, UnmountKeepsTheNewestTimes) {
  ASSERT_TRUE(md_->unmount());
  md_.reset();
  auto img = io_->crash_image(Policy::kUnflushedLost);
  auto md = mount_ok(*img, g_, opts());
  InodeAttr a;
  ASSERT_EQ(md->getattr(ino_, &a), 0);
  EXPECT_EQ(a.mtime_ns, newest_mtime_);
}

}  // namespace
}  // namespace peregrine::meta

namespace peregrine::meta {
namespace {

// Metadata::set_before_persist: the FUSE layer's data kept in memory
// (fs/tail_blocks.h) is written from this hook, so it must run before each
// journal batch is written and inside each checkpoint, and its error must
// stop the commit rather than let the metadata run ahead of the data.
TEST(BeforePersist, RunsBeforeEachBatchAndCheckpointAndItsErrorFailsTheCommit) {
  const Geometry g = test::small_geometry();
  auto io = test::new_volume(g);
  auto md = test::mount_ok(*io, g, test::test_options());
  ASSERT_NE(md, nullptr);
  int calls = 0, fail_with = 0;
  uint64_t batches_at_call = 0;
  md->set_before_persist([&] {
    ++calls;
    batches_at_call = md->journal_batches();
    return fail_with;
  });
  InodeAttr f;
  ASSERT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &f), 0);
  ASSERT_EQ(md->fsync(f.ino), 0);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(md->journal_batches(), batches_at_call + 1) << "the hook ran after the batch was written";
  ASSERT_EQ(md->fsync(f.ino), 0);
  EXPECT_EQ(calls, 1) << "nothing to commit, nothing to persist";
  ASSERT_EQ(md->checkpoint(), 0);
  EXPECT_EQ(calls, 2) << "a checkpoint persists the model: the hook must run";
  fail_with = -EIO;
  InodeAttr h;
  ASSERT_EQ(md->create(kRootIno, "h", 0644, Cred{}, &h), 0);
  EXPECT_EQ(md->fsync(h.ino), -EIO);
  EXPECT_TRUE(md->write_failed());
}

// Metadata::stop_changes (an online restripe that can no longer vouch for
// later writes): a stop that comes while a commit's data is being written
// (the before-persist hook, where a tail block may wait for a restripe
// window) writes no batch after it; from then on changes fail with EROFS
// and fsync with EIO, and the record never reaches the volume.
TEST(StopChanges, AStopDuringACommitWritesNoBatchAndRefusesWhatFollows) {
  const Geometry g = test::small_geometry();
  auto io = test::new_volume(g);
  auto md = test::mount_ok(*io, g, test::test_options());
  ASSERT_NE(md, nullptr);
  InodeAttr f;
  ASSERT_EQ(md->create(kRootIno, "kept", 0644, Cred{}, &f), 0);
  ASSERT_EQ(md->fsync(f.ino), 0);
  const uint64_t batches = md->journal_batches();
  md->set_before_persist([&] {
    md->stop_changes();
    return 0;
  });
  InodeAttr lost;
  ASSERT_EQ(md->create(kRootIno, "lost", 0644, Cred{}, &lost), 0);
  EXPECT_EQ(md->fsync(lost.ino), -EIO);
  EXPECT_EQ(md->journal_batches(), batches) << "a batch was written after the stop";
  EXPECT_TRUE(md->write_failed());
  InodeAttr other;
  EXPECT_EQ(md->create(kRootIno, "other", 0644, Cred{}, &other), -EROFS);
  EXPECT_EQ(md->fsync(f.ino), -EIO);
  md.reset();
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  auto again = test::mount_ok(*img, g, test::test_options());
  ASSERT_NE(again, nullptr);
  InodeAttr a;
  EXPECT_EQ(again->lookup(kRootIno, "kept", &a), 0);
  EXPECT_EQ(again->lookup(kRootIno, "lost", &a), -ENOENT);
}

}  // namespace
}  // namespace peregrine::meta
