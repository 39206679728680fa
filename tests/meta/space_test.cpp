// The metadata area's use (space.h): the Model's running checkpoint size is
// exactly what a checkpoint then writes, whatever the operations; a full
// area refuses new files but not overwrites, growth or deletes; statfs
// counts the files that can still be created.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "meta_test_util.h"
#include "peregrine/meta/checkpoint.h"

namespace peregrine::meta {
namespace {

using test::cat;
using test::kMiB;
using test::mount_ok;
using test::new_volume;
using test::small_geometry;

constexpr uint64_t B = kBlockSize;

class SpaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io = new_volume(g);
    md = mount_ok(*io, g);
    ASSERT_NE(md, nullptr);
  }
  // Writes a checkpoint and compares its body length with the running count.
  void expect_exact(const char* when) {
    const uint64_t counted = md->space().used;
    ASSERT_EQ(md->checkpoint(), 0) << md->last_error();
    SlotState st[2];
    const int slot = newest_valid_checkpoint(*io, md->layout(), st);
    ASSERT_GE(slot, 0);
    EXPECT_EQ(st[slot].header.body_len, counted) << when;
  }
  Ino mk(Ino parent, const std::string& name, uint32_t mode = S_IFREG | 0644) {
    InodeAttr a;
    EXPECT_EQ(md->mknod(parent, name, mode, 0, Cred{}, &a), 0) << name;
    return a.ino;
  }
  void write(Ino ino, uint64_t off, uint64_t len) {
    std::vector<WriteRange> w;
    ASSERT_EQ(md->prepare_write(ino, off, len, &w), 0);
    InodeAttr a;
    ASSERT_EQ(md->getattr(ino, &a), 0);
    ASSERT_EQ(md->complete_write(ino, w, std::max(a.size, off + len)), 0);
  }

  Geometry g = small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  std::unique_ptr<Metadata> md;
};

TEST_F(SpaceTest, RunningSizeIsExactlyTheCheckpointBody) {
  expect_exact("fresh");
  InodeAttr a;
  ASSERT_EQ(md->mkdir(kRootIno, "dir", S_IFDIR | 0755, Cred{}, &a), 0);
  const Ino dir = a.ino;
  const Ino f = mk(dir, "file");
  mk(kRootIno, std::string(255, 'n'));
  ASSERT_EQ(md->symlink(dir, "link", "a/target/path", Cred{}, &a), 0);
  expect_exact("after creates");

  ASSERT_EQ(md->setxattr(f, "user.a", "value", 0), 0);
  ASSERT_EQ(md->setxattr(f, "user.a", "a longer value", 0), 0);
  ASSERT_EQ(md->setxattr(f, "user.b", "", 0), 0);
  ASSERT_EQ(md->setxattr(f, "user.b", "x", XATTR_REPLACE), 0);
  ASSERT_EQ(md->removexattr(f, "user.a"), 0);
  expect_exact("after xattrs");

  // Extents: scattered writes, a write inside an unwritten extent (split on
  // completion), a punched hole inside an extent, zero range, truncate.
  for (uint64_t i = 0; i < 8; ++i) write(f, i * 3 * B, B);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_KEEP_SIZE, 64 * B, 32 * B), 0);
  write(f, 70 * B, B);
  write(f, 71 * B, 2 * B);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 80 * B, 2 * B), 0);
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_ZERO_RANGE, 3 * B, 4 * B), 0);
  expect_exact("after writes and fallocate");
  SetAttrIn t;
  t.valid = SetAttrIn::kSize;
  t.size = 10 * B;
  ASSERT_EQ(md->setattr(f, t, &a), 0);
  expect_exact("after truncate");

  // Names: link, rename to a longer name, rename over an existing entry,
  // exchange, unlink of an open file (orphan), its release, rmdir.
  ASSERT_EQ(md->link(f, kRootIno, "hard", &a), 0);
  ASSERT_EQ(md->rename(kRootIno, "hard", kRootIno, "a-much-longer-hard-link-name", 0), 0);
  mk(kRootIno, "victim");
  ASSERT_EQ(md->rename(dir, "link", kRootIno, "victim", 0), 0);
  mk(kRootIno, "other");
  ASSERT_EQ(md->rename(kRootIno, "other", kRootIno, "victim", RENAME_EXCHANGE), 0);
  expect_exact("after renames");
  const Ino open_one = mk(kRootIno, "open");
  ASSERT_EQ(md->open(open_one), 0);
  ASSERT_EQ(md->unlink(kRootIno, "open"), 0);
  expect_exact("with an orphan");
  ASSERT_EQ(md->release(open_one), 0);
  ASSERT_EQ(md->unlink(dir, "file"), 0);
  ASSERT_EQ(md->unlink(kRootIno, "a-much-longer-hard-link-name"), 0);
  ASSERT_EQ(md->rmdir(kRootIno, "dir"), 0);
  expect_exact("after deletes");

  // A remount counts from the decoded checkpoint.
  const uint64_t before = md->space().used;
  ASSERT_TRUE(md->unmount().is_ok());
  md = mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->space().used, before);
}

TEST_F(SpaceTest, FullAreaRefusesNewFilesOnly) {
  g.meta_size = 2 * kMiB;  // 1 MiB journal, two 512 KiB slots
  g.data_offset = 2 * kMiB;
  io = new_volume(g);
  md = mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  const Ino f = mk(kRootIno, "data");
  write(f, 0, 64 * B);
  StatFs empty;
  ASSERT_EQ(md->statfs(&empty), 0);
  int created = 0;
  InodeAttr a;
  int rc = 0;
  for (; created < 100000; ++created) {
    rc = md->mknod(kRootIno, cat("file-name-of-20-chars", 100000 + created), S_IFREG | 0644, 0, Cred{}, &a);
    if (rc != 0) break;
  }
  ASSERT_EQ(rc, -ENOSPC) << "after " << created;
  EXPECT_NEAR(static_cast<double>(empty.files_free), created, created * 0.05);
  StatFs full;
  ASSERT_EQ(md->statfs(&full), 0);
  EXPECT_EQ(full.files_free, 0u);
  EXPECT_EQ(full.files, 2u + created);
  EXPECT_GT(full.avail_blocks, 0u);
  EXPECT_EQ(md->mkdir(kRootIno, "d", S_IFDIR | 0755, Cred{}, &a), -ENOSPC);
  EXPECT_EQ(md->setxattr(f, "user.k", "v", 0), -ENOSPC);
  EXPECT_EQ(md->rename(kRootIno, "data", kRootIno, "a-longer-name-than-data", 0), -ENOSPC);
  EXPECT_EQ(md->rename(kRootIno, "data", kRootIno, "dat", 0), 0);

  // Overwrites allocate nothing and go through; so does growth, until only
  // the hard reserve is left.
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(f, 4 * B, 8 * B, &w), 0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(w[0].written);
  ASSERT_EQ(md->complete_write(f, w, 64 * B), 0);
  int grown = 0;
  for (; grown < 100000; ++grown) {
    w.clear();
    // Every other block: each write is an extent of its own.
    rc = md->prepare_write(f, (100 + 2 * static_cast<uint64_t>(grown)) * B, B, &w);
    if (rc != 0) break;
    ASSERT_EQ(md->complete_write(f, w, (101 + 2 * static_cast<uint64_t>(grown)) * B), 0);
  }
  EXPECT_EQ(rc, -ENOSPC);
  EXPECT_GT(grown, 100);
  ASSERT_EQ(md->statfs(&full), 0);
  EXPECT_EQ(full.avail_blocks, 0u) << "no extent can be recorded, yet statfs says blocks are available";
  EXPECT_GT(full.free_blocks, 0u);
  const MetaSpace sp = md->space();
  EXPECT_LE(sp.used, sp.capacity);
  // Overwrites still work, and so does everything that only shrinks.
  w.clear();
  ASSERT_EQ(md->prepare_write(f, 100 * B, B, &w), 0);
  ASSERT_EQ(md->complete_write(f, w, 0), 0);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(md->unlink(kRootIno, cat("file-name-of-20-chars", 100000 + i)), 0);
  ASSERT_EQ(md->statfs(&full), 0);
  EXPECT_GT(full.files_free, 0u);
  EXPECT_EQ(md->checkpoint(), 0) << md->last_error();
  ASSERT_TRUE(md->unmount().is_ok());
}

}  // namespace
}  // namespace peregrine::meta
