// Access times by Options::atime, with the deterministic test clock: the
// relatime rule (update when atime is not newer than mtime or ctime, or a
// day old), strictatime (every access, kept in memory until the next
// journaled change of the inode, fsync, sync or unmount), noatime, and
// what survives a crash.
#include <sys/stat.h>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

constexpr int64_t kDay = int64_t{24} * 3600 * 1000000000;

class AtimeTest : public ::testing::Test {
 protected:
  void mount(AtimeRule rule) {
    io = test::new_volume(g);
    Options o = test::test_options();
    o.atime = rule;
    o.clock = [this] { return clock += 1000; };
    opts = o;
    md = test::mount_ok(*io, g, o);
    ASSERT_NE(md, nullptr);
    InodeAttr a;
    ASSERT_EQ(md->create(kRootIno, "f", 0644, Cred{}, &a), 0);
    ino = a.ino;
  }
  int64_t atime() {
    InodeAttr a;
    EXPECT_EQ(md->getattr(ino, &a), 0);
    return a.atime_ns;
  }
  // The atime a mount after a crash (what fsync made durable) shows.
  int64_t atime_after_crash() {
    auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
    md.reset();
    auto md2 = test::mount_ok(*img, g, opts);
    InodeAttr a;
    if (md2 == nullptr || md2->getattr(ino, &a) != 0) return -1;
    return a.atime_ns;
  }
  bool read_due() {
    std::vector<Segment> segs;
    bool due = false;
    EXPECT_EQ(md->map_read(ino, 0, 4096, &segs, &due), 0);
    return due;
  }
  Geometry g = test::small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  std::unique_ptr<Metadata> md;
  Options opts;
  int64_t clock = 1'000'000'000;
  Ino ino = 0;
};

TEST_F(AtimeTest, RelatimeUpdatesOncePerChangeOrDay) {
  mount(AtimeRule::kRelatime);
  // A new file: atime == mtime, so the first read updates it.
  EXPECT_TRUE(read_due());
  EXPECT_TRUE(md->accessed(ino));
  const int64_t first = atime();
  EXPECT_GT(first, 0);
  EXPECT_FALSE(read_due());
  EXPECT_FALSE(md->accessed(ino));
  EXPECT_EQ(atime(), first);
  // A change (chmod: ctime) makes the next read update it again.
  InodeAttr out;
  SetAttrIn in;
  in.valid = SetAttrIn::kMode;
  in.mode = 0600;
  ASSERT_EQ(md->setattr(ino, in, &out), 0);
  EXPECT_TRUE(md->accessed(ino));
  EXPECT_GT(atime(), first);
  const int64_t second = atime();
  // A day later, again.
  EXPECT_FALSE(md->accessed(ino));
  clock += kDay;
  EXPECT_TRUE(md->accessed(ino));
  EXPECT_GT(atime(), second);
}

TEST_F(AtimeTest, RelatimeUpdateIsJournaled) {
  mount(AtimeRule::kRelatime);
  ASSERT_TRUE(md->accessed(ino));
  const int64_t t = atime();
  ASSERT_EQ(md->fsync(ino), 0);
  EXPECT_EQ(atime_after_crash(), t);
}

TEST_F(AtimeTest, StrictatimeUpdatesEveryAccessAndFsyncJournalsIt) {
  mount(AtimeRule::kStrict);
  int64_t last = atime();
  for (int i = 0; i < 3; ++i) {
    clock += 5'000'000;  // past the kernel's clock tick
    EXPECT_TRUE(read_due());
    EXPECT_TRUE(md->accessed(ino));
    EXPECT_GT(atime(), last);
    last = atime();
    // Within the same tick, as the kernel: no second update.
    EXPECT_FALSE(read_due());
    EXPECT_FALSE(md->accessed(ino));
    EXPECT_EQ(atime(), last);
  }
  ASSERT_EQ(md->fsync(ino), 0);
  EXPECT_EQ(atime_after_crash(), last);
}

TEST_F(AtimeTest, NoatimeNeverUpdates) {
  mount(AtimeRule::kNoatime);
  const int64_t t = atime();
  EXPECT_FALSE(read_due());
  EXPECT_FALSE(md->accessed(ino));
  clock += kDay;
  EXPECT_FALSE(md->accessed(ino));
  EXPECT_EQ(atime(), t);
}

}  // namespace
}  // namespace peregrine::meta
