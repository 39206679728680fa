// Read-only metadata mounts (Options::read_only): a journal left by a crash
// is replayed into memory only, every changing call fails with EROFS, and
// not one write or flush reaches the volume — mount, use or unmount.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;

Options read_only_options(bool skip_replay = false) {
  Options o = test::test_options();
  o.read_only = true;
  o.skip_replay = skip_replay;
  return o;
}

struct Crashed {
  std::unique_ptr<MemoryVolumeIo> image;
  std::string checkpointed;  // dump at the last checkpoint
  std::string durable;       // dump at the last fsync
};

// A volume with a checkpoint, then fsync'd changes only in the journal.
Crashed crash_with_journal(const Geometry& g) {
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);
  const Cred c{1000, 100};
  InodeAttr d, f;
  EXPECT_EQ(md->mkdir(kRootIno, "d", 0755, c, &d), 0);
  EXPECT_EQ(md->checkpoint(), 0);
  Crashed out;
  out.checkpointed = md->dump();
  EXPECT_EQ(md->create(d.ino, "f", 0644, c, &f), 0);
  std::vector<WriteRange> w;
  EXPECT_EQ(md->prepare_write(f.ino, 0, 65536, &w), 0);
  EXPECT_EQ(md->complete_write(f.ino, w, 65536), 0);
  EXPECT_EQ(md->release(f.ino), 0);
  EXPECT_EQ(md->setxattr(d.ino, "user.x", "1", 0), 0);
  EXPECT_EQ(md->sync(), 0);
  out.durable = md->dump();
  out.image = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  return out;
}

TEST(ReadOnlyMetadata, ReplaysInMemoryRefusesChangesAndNeverWrites) {
  const Geometry g = small_geometry();
  Crashed crashed = crash_with_journal(g);
  MemoryVolumeIo& img = *crashed.image;
  ASSERT_EQ(img.write_count(), 0u);

  auto md = mount_ok(img, g, read_only_options());
  ASSERT_NE(md, nullptr);
  EXPECT_TRUE(md->mount_report().read_only);
  EXPECT_GT(md->mount_report().replayed_batches, 0u);
  EXPECT_EQ(md->dump(), crashed.durable) << "the read-only view lacks what was fsync'd";

  const Cred c{0, 0};
  InodeAttr a, d;
  ASSERT_EQ(md->lookup(kRootIno, "d", &d), 0);
  ASSERT_EQ(md->lookup(d.ino, "f", &a), 0);
  EXPECT_EQ(md->create(kRootIno, "new", 0644, c, &a), -EROFS);
  EXPECT_EQ(md->mkdir(kRootIno, "nd", 0755, c, &a), -EROFS);
  EXPECT_EQ(md->mknod(kRootIno, "nn", S_IFIFO | 0644, 0, c, &a), -EROFS);
  EXPECT_EQ(md->symlink(kRootIno, "s", "d", c, &a), -EROFS);
  ASSERT_EQ(md->lookup(d.ino, "f", &a), 0);
  EXPECT_EQ(md->link(a.ino, kRootIno, "hard", &a), -EROFS);
  EXPECT_EQ(md->unlink(d.ino, "f"), -EROFS);
  EXPECT_EQ(md->rmdir(kRootIno, "d"), -EROFS);
  EXPECT_EQ(md->rename(d.ino, "f", kRootIno, "g", 0), -EROFS);
  SetAttrIn in;
  in.valid = SetAttrIn::kMode;
  in.mode = 0600;
  EXPECT_EQ(md->setattr(a.ino, in, &a), -EROFS);
  EXPECT_EQ(md->setxattr(d.ino, "user.y", "2", 0), -EROFS);
  EXPECT_EQ(md->removexattr(d.ino, "user.x"), -EROFS);
  std::vector<WriteRange> w;
  EXPECT_EQ(md->prepare_write(a.ino, 0, 4096, &w), -EROFS);
  EXPECT_EQ(md->complete_write(a.ino, w, 4096), -EROFS);
  EXPECT_EQ(md->fallocate(a.ino, FALLOC_FL_KEEP_SIZE, 0, 4096), -EROFS);
  EXPECT_EQ(md->checkpoint(), -EROFS);
  EXPECT_EQ(md->open(a.ino), 0);  // reading is fine
  EXPECT_EQ(md->release(a.ino), 0);
  EXPECT_EQ(md->fsync(a.ino), 0);
  EXPECT_EQ(md->sync(), 0);
  EXPECT_EQ(md->dump(), crashed.durable) << "a refused call changed the view";
  EXPECT_TRUE(md->unmount());
  md.reset();
  EXPECT_EQ(img.write_count(), 0u) << "a read-only mount wrote to the volume";
  EXPECT_EQ(img.flush_count(), 0u);

  // The journal is still there for a read-write mount to apply.
  auto rw = mount_ok(img, g);
  ASSERT_NE(rw, nullptr);
  EXPECT_GT(rw->mount_report().replayed_batches, 0u);
  EXPECT_EQ(rw->dump(), crashed.durable);
}

TEST(ReadOnlyMetadata, SkipReplayShowsTheLastCheckpointAndNeedsReadOnly) {
  const Geometry g = small_geometry();
  Crashed crashed = crash_with_journal(g);
  MemoryVolumeIo& img = *crashed.image;

  Options rw_skip = test::test_options();
  rw_skip.skip_replay = true;
  auto refused = Metadata::mount(img, g, rw_skip);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("needs a read-only mount"), std::string::npos)
      << refused.status().message();

  auto md = mount_ok(img, g, read_only_options(/*skip_replay=*/true));
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->mount_report().replayed_batches, 0u);
  EXPECT_GT(md->mount_report().skipped_batches, 0u);
  EXPECT_EQ(md->dump(), crashed.checkpointed);
  EXPECT_TRUE(md->unmount());
  md.reset();
  EXPECT_EQ(img.write_count(), 0u);

  auto rw = mount_ok(img, g);
  ASSERT_NE(rw, nullptr);
  EXPECT_EQ(rw->dump(), crashed.durable);
}

}  // namespace
}  // namespace peregrine::meta
