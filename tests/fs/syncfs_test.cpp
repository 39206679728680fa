// syncfs(2) (`sync -f`) succeeds after a file that nobody has open loses its
// last name, by unlink or by a rename over it. In fuse.cache=writeback the
// kernel keeps a file's mtime/ctime itself and writes them back with a
// SETATTR, also right after the unlink, when the daemon has already freed
// the inode: that SETATTR failed with ENOENT, the kernel recorded the error
// against the filesystem, and the next syncfs returned it. Run in both
// cache modes; the data must be what a local filesystem would show.
#include <fcntl.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class SyncfsTest : public CacheModes<MountedTest> {
 protected:
  // syncfs reports errors recorded since this descriptor was opened.
  void SetUp() override {
    CacheModes<MountedTest>::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    root_ = Fd(::open(volume_->mountpoint().c_str(), O_RDONLY | O_DIRECTORY));
    ASSERT_TRUE(root_.ok()) << std::strerror(errno);
  }
  void TearDown() override {
    root_.reset();
    CacheModes<MountedTest>::TearDown();
  }
  Outcome syncfs() { return outcome(::syncfs(root_.get())); }

  Fd root_;
};

TEST_P(SyncfsTest, SucceedsAfterAClosedFileIsRemoved) {
  ASSERT_TRUE(write_file(at("f"), "hi\n"));
  ASSERT_EQ(::unlink(at("f").c_str()), 0);
  EXPECT_EQ(syncfs(), (Outcome{0, 0}));
  EXPECT_NE(::access(at("f").c_str(), F_OK), 0);
  // A file written, removed and synced over and over, as a build tree does.
  for (int i = 0; i < 20; ++i) {
    std::string name = at("tmp" + std::to_string(i));
    ASSERT_TRUE(write_file(name, pattern(10000, i)));
    ASSERT_EQ(::unlink(name.c_str()), 0);
  }
  EXPECT_EQ(syncfs(), (Outcome{0, 0}));
}

TEST_P(SyncfsTest, SucceedsAfterARenameReplacesAClosedFile) {
  ASSERT_TRUE(write_file(at("a"), "new\n"));
  ASSERT_TRUE(write_file(at("b"), "old contents\n"));
  ASSERT_EQ(::rename(at("a").c_str(), at("b").c_str()), 0);
  EXPECT_EQ(syncfs(), (Outcome{0, 0}));
  EXPECT_EQ(read_file(at("b")), "new\n");
  EXPECT_NE(::access(at("a").c_str(), F_OK), 0);
}

PEREGRINE_FOR_CACHE_MODES(SyncfsTest);

}  // namespace
}  // namespace peregrine::fstest
