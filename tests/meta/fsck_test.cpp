// fsck finds and repairs planted damage: wrong link count, unreachable
// (orphan) inode, leaked extent, overlapping extents, dangling entry; a
// clean volume is reported clean; -n writes nothing.
#include "peregrine/meta/fsck.h"
#include "peregrine/meta/posix_acl.h"

#include <sys/stat.h>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;
constexpr uint64_t B = 4096;

bool has(const FsckReport& r, const std::string& needle) {
  for (const auto& m : r.messages) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string all(const FsckReport& r) {
  std::string s;
  for (const auto& m : r.messages) s += m + "\n";
  return s;
}

class FsckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io = new_volume(g);
    auto md = mount_ok(*io, g);
    ASSERT_NE(md, nullptr);
    InodeAttr d, a, b, x;
    ASSERT_EQ(md->mkdir(kRootIno, "d", 0755, Cred{}, &d), 0);
    ASSERT_EQ(md->create(d.ino, "a", 0644, Cred{}, &a), 0);
    std::vector<WriteRange> w;
    ASSERT_EQ(md->prepare_write(a.ino, 0, 8 * B, &w), 0);
    ASSERT_EQ(md->complete_write(a.ino, w, 8 * B), 0);
    a_vol = w[0].vol_off;
    ASSERT_EQ(md->mknod(kRootIno, "b", S_IFREG | 0644, 0, Cred{}, &b), 0);
    ASSERT_EQ(md->link(b.ino, d.ino, "b2", &x), 0);
    ASSERT_EQ(md->symlink(kRootIno, "s", "d/a", Cred{}, &x), 0);
    a_ino = a.ino;
    b_ino = b.ino;
    d_ino = d.ino;
    ASSERT_TRUE(md->unmount().is_ok());
  }
  Geometry g = small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  Ino a_ino = 0, b_ino = 0, d_ino = 0;
  uint64_t a_vol = 0;
};

TEST_F(FsckTest, CleanVolumeIsClean) {
  FsckReport r = run_fsck(*io, g, {});
  EXPECT_EQ(r.exit_code, 0) << all(r);
  EXPECT_EQ(r.problems, 0);
  EXPECT_TRUE(has(r, "bytes in use")) << all(r);
}

// Replay ends where no further batch header is found: that is the journal's
// normal end, and fsck says so rather than sounding like an error.
TEST_F(FsckTest, ReportsTheRoutineEndOfTheJournalPlainly) {
  FsckReport r = run_fsck(*io, g, {});
  EXPECT_TRUE(has(r, "batches replayed, up to the end of the journal")) << all(r);
  EXPECT_FALSE(has(r, "stopped")) << all(r);
  EXPECT_FALSE(has(r, "no valid batch header")) << all(r);
}

TEST_F(FsckTest, FreshVolumeIsClean) {
  auto fresh = new_volume(g);
  FsckReport r = run_fsck(*fresh, g, {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r, "fresh"));
}

TEST_F(FsckTest, FindsAndRepairsPlantedDamage) {
  auto lm = load_metadata(*io, g);
  ASSERT_TRUE(lm.has_value()) << lm.status().message();
  Model& m = lm->model;
  // 1. Wrong link count.
  m.find(b_ino)->attr.nlink = 5;
  // 2. Unreachable inode that still claims a link, with data.
  auto lost = std::make_unique<Inode>();
  lost->attr = InodeAttr{m.next_ino, 1, S_IFREG | 0600, 0, 0, 1, B, 0, 0, 0, 0, 0};
  lost->extents.insert(0, g.data_offset + 40 * test::kMiB, B, true);
  const Ino lost_ino = m.next_ino++;
  m.inodes.emplace(lost_ino, std::move(lost));
  // 3. Leaked extent: an unlinked inode that is on no orphan list.
  auto leak = std::make_unique<Inode>();
  leak->attr = InodeAttr{m.next_ino, 1, S_IFREG | 0600, 0, 0, 0, 4 * B, 0, 0, 0, 0, 0};
  leak->extents.insert(0, g.data_offset + 50 * test::kMiB, 4 * B, true);
  const Ino leak_ino = m.next_ino++;
  m.inodes.emplace(leak_ino, std::move(leak));
  // 4. Overlapping extents: the symlink's neighbour file b maps a's blocks.
  m.find(b_ino)->extents.insert(0, a_vol + 2 * B, 2 * B, true);
  m.find(b_ino)->attr.size = 2 * B;
  // 5. An entry naming a missing inode.
  m.find(d_ino)->dir->add("ghost", 424242);
  ASSERT_TRUE(store_metadata(*io, g, *lm).is_ok());

  // Mount refuses overlapping extents and says to run fsck.
  auto refused = Metadata::mount(*io, g, test::test_options());
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("fsck"), std::string::npos);

  // -n: reports everything, changes nothing.
  FsckReport r1 = run_fsck(*io, g, {});
  EXPECT_EQ(r1.exit_code, 4) << all(r1);
  EXPECT_TRUE(has(r1, "link count 5, should be 2")) << all(r1);
  EXPECT_TRUE(has(r1, test::cat("unreachable inode ", lost_ino))) << all(r1);
  EXPECT_TRUE(has(r1, test::cat("unreachable inode ", leak_ino) + " with no links holding 16384 bytes of leaked space"))
      << all(r1);
  EXPECT_TRUE(has(r1, test::cat("overlaps inode ", a_ino))) << all(r1);
  EXPECT_TRUE(has(r1, "names missing inode 424242")) << all(r1);
  FsckReport r1b = run_fsck(*io, g, {});
  EXPECT_EQ(r1b.problems, r1.problems);

  // Repair, then a second check is clean and the volume mounts.
  FsckReport r2 = run_fsck(*io, g, {.repair = true});
  EXPECT_EQ(r2.exit_code, 1) << all(r2);
  EXPECT_EQ(r2.fixed, r2.problems);
  FsckReport r3 = run_fsck(*io, g, {});
  EXPECT_EQ(r3.exit_code, 0) << all(r3);

  auto md = mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  InodeAttr x;
  ASSERT_EQ(md->getattr(b_ino, &x), 0);
  EXPECT_EQ(x.nlink, 2u);
  EXPECT_EQ(md->getattr(leak_ino, &x), -ENOENT);
  ASSERT_EQ(md->lookup(kRootIno, "lost+found", &x), 0);
  ASSERT_EQ(md->lookup(x.ino, test::cat("#", lost_ino), &x), 0);
  EXPECT_EQ(x.ino, lost_ino);
  ASSERT_EQ(md->lookup(d_ino, "ghost", &x), -ENOENT);
  // b lost the overlapping blocks (reads zeros), a kept its data.
  std::vector<Segment> s;
  ASSERT_EQ(md->map_read(b_ino, 0, 2 * B, &s), 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, Segment::kZero);
  s.clear();
  ASSERT_EQ(md->map_read(a_ino, 0, 8 * B, &s), 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, Segment::kData);
  test::expect_space_consistent(md->dump(), md->free_map(), g);
}

// What releases that stored ACL xattrs without applying them left behind
// (cp -a: mode 0600, access ACL of a 0644 file), and ACL xattrs no kernel
// would accept: fsck brings the mode in step with the ACL and drops what
// is malformed or misplaced.
TEST_F(FsckTest, AclsOutOfStepWithTheModeAreRepaired) {
  const std::string minimal644(
      "\x02\0\0\0\x01\0\x06\0\xff\xff\xff\xff\x04\0\x04\0\xff\xff\xff\xff"
      "\x20\0\x04\0\xff\xff\xff\xff",
      28);
  auto lm = load_metadata(*io, g);
  ASSERT_TRUE(lm.has_value()) << lm.status().message();
  Model& m = lm->model;
  m.find(a_ino)->attr.mode = S_IFREG | 0600;
  m.find(a_ino)->xattrs[std::string(kAclAccessXattr)] = minimal644;
  m.find(b_ino)->xattrs[std::string(kAclDefaultXattr)] = minimal644;  // not a directory
  m.find(d_ino)->xattrs[std::string(kAclAccessXattr)] = "junk";
  ASSERT_TRUE(store_metadata(*io, g, *lm).is_ok());

  FsckReport r1 = run_fsck(*io, g, {});
  EXPECT_EQ(r1.exit_code, 4) << all(r1);
  EXPECT_TRUE(has(r1, test::cat("inode ", a_ino) + ": mode 0600 but its access ACL grants 0644")) << all(r1);
  EXPECT_TRUE(has(r1, test::cat("inode ", b_ino) + ": a default ACL on a non-directory")) << all(r1);
  EXPECT_TRUE(has(r1, test::cat("inode ", d_ino) + ": system.posix_acl_access is not a valid ACL")) << all(r1);
  FsckReport r2 = run_fsck(*io, g, {.repair = true});
  EXPECT_EQ(r2.exit_code, 1) << all(r2);
  FsckReport r3 = run_fsck(*io, g, {});
  EXPECT_EQ(r3.exit_code, 0) << all(r3);

  auto md = mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  InodeAttr x;
  ASSERT_EQ(md->getattr(a_ino, &x), 0);
  EXPECT_EQ(x.mode, S_IFREG | 0644u);
  std::string v;
  EXPECT_EQ(md->getxattr(a_ino, kAclAccessXattr, &v), -ENODATA);  // the mode says it all now
  EXPECT_EQ(md->getxattr(b_ino, kAclDefaultXattr, &v), -ENODATA);
  EXPECT_EQ(md->getxattr(d_ino, kAclAccessXattr, &v), -ENODATA);
}

TEST_F(FsckTest, OrphanListIsFreedByRepair) {
  {
    auto md = mount_ok(*io, g);
    ASSERT_EQ(md->open(a_ino), 0);
    ASSERT_EQ(md->unlink(d_ino, "a"), 0);
    ASSERT_EQ(md->sync(), 0);
    // crash with the file open: the orphan stays in the journal
  }
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  FsckReport r = run_fsck(*img, g, {.repair = true});
  EXPECT_TRUE(has(r, test::cat("orphan inode ", a_ino))) << all(r);
  EXPECT_EQ(r.problems, 0) << all(r);
  auto lm = load_metadata(*img, g);
  ASSERT_TRUE(lm.has_value());
  EXPECT_EQ(lm->model.find(a_ino), nullptr);
  EXPECT_EQ(lm->replay.records, 0u);  // the repair checkpoint covers the journal
}

TEST_F(FsckTest, UnreadableMetadataIsAnError) {
  const MetaLayout l = *MetaLayout::compute(g);
  std::vector<std::byte> junk(8, std::byte{0x77});
  io->poke(l.slot_off[0] + 32, junk);
  io->poke(l.slot_off[1] + 32, junk);
  FsckReport r = run_fsck(*io, g, {});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_TRUE(has(r, "no valid checkpoint")) << all(r);
}

}  // namespace
}  // namespace peregrine::meta
