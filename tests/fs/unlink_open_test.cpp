// Unlinking an open file: the data stays readable and writable through the
// descriptor, and its space returns to the free pool after the last close.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class UnlinkOpenTest : public CacheModes<MountedTest> {};

uint64_t free_bytes(const std::string& path) {
  struct statvfs s;
  EXPECT_EQ(::statvfs(path.c_str(), &s), 0);
  return static_cast<uint64_t>(s.f_bfree) * s.f_frsize;
}

constexpr size_t kSize = 16 << 20;

TEST_P(UnlinkOpenTest, OpenFileSurvivesUnlinkAndSpaceIsFreedAfterClose) {
  const std::string data = pattern(kSize, 7);
  const uint64_t empty = free_bytes(volume_->mountpoint());
  Fd fd(::open(at("victim").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(write_at(fd.get(), data, 0));
  ASSERT_EQ(::fsync(fd.get()), 0);
  const uint64_t with_file = free_bytes(volume_->mountpoint());
  EXPECT_LE(with_file + kSize, empty) << "16 MiB of data must use at least 16 MiB";

  ASSERT_EQ(::unlink(at("victim").c_str()), 0);
  EXPECT_NE(::access(at("victim").c_str(), F_OK), 0);
  struct stat st;
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_size, static_cast<off_t>(kSize));
  EXPECT_TRUE(read_at(fd.get(), kSize, 0) == data) << "unlinked file's data changed";
  // Still writable, too.
  ASSERT_TRUE(write_at(fd.get(), std::string("after unlink"), 100));
  EXPECT_EQ(read_at(fd.get(), 12, 100), "after unlink");
  // While open, the space is still in use.
  EXPECT_LE(free_bytes(volume_->mountpoint()) + kSize, empty);
  fd.reset();

  // FUSE sends RELEASE asynchronously after close(2); the unmount waits for
  // the daemon, so after a remount the space must be free in any case.
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_GE(free_bytes(volume_->mountpoint()), with_file + kSize) << "the unlinked file's space was not freed";
}

TEST_P(UnlinkOpenTest, SpaceOfAnUnlinkedOpenFileIsRecoveredAfterACrash) {
  const uint64_t empty = free_bytes(volume_->mountpoint());
  Fd fd(::open(at("orphan").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(write_at(fd.get(), pattern(kSize, 8), 0));
  ASSERT_EQ(::fsync(fd.get()), 0);
  ASSERT_EQ(::unlink(at("orphan").c_str()), 0);
  ASSERT_EQ(::fsync(fd.get()), 0);
  volume_->kill9();
  fd.reset();  // the connection is gone; close fails quietly
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(::access(at("orphan").c_str(), F_OK), 0);
  EXPECT_GE(free_bytes(volume_->mountpoint()) + (1 << 20), empty)
      << "an orphan's space must be recovered at the next mount (1 MiB slack for metadata)";
}

PEREGRINE_FOR_CACHE_MODES(UnlinkOpenTest);

}  // namespace
}  // namespace peregrine::fstest
