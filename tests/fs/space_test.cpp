// Space accounting: statfs follows the allocator, a full volume returns
// ENOSPC cleanly (the daemon keeps serving), and space freed by deleting
// files can be written again.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class SpaceTest : public CacheModes<MountedTest> {};

struct statvfs statfs_of(const std::string& path) {
  struct statvfs s {};
  EXPECT_EQ(::statvfs(path.c_str(), &s), 0);
  return s;
}

TEST_P(SpaceTest, FullVolumeGivesEnospcAndRecoversAfterDelete) {
  const struct statvfs empty = statfs_of(volume_->mountpoint());
  ASSERT_GT(empty.f_blocks, 0u);
  EXPECT_LE(empty.f_bfree, empty.f_blocks);
  EXPECT_LE(empty.f_bavail, empty.f_bfree);
  const uint64_t free_bytes = uint64_t{empty.f_bavail} * empty.f_frsize;

  const std::string chunk = pattern(1 << 20, 1);
  Fd fd(::open(at("fill").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_TRUE(fd.ok());
  uint64_t written = 0;
  int err = 0;
  // write(2) itself fails, as on ext4, also for a writer that never
  // closes or fsyncs (`dd if=/dev/zero of=FILE`): with the page cache at
  // its first write after the volume refused a writeback
  // (refused_writebacks.h). The bound keeps a regression from writing
  // into the page cache forever.
  const uint64_t bound = free_bytes + (uint64_t{1} << 30);
  while (written <= bound) {
    ssize_t n = ::write(fd.get(), chunk.data(), chunk.size());
    if (n < 0) {
      err = errno;
      break;
    }
    written += static_cast<uint64_t>(n);
  }
  EXPECT_EQ(err, ENOSPC) << "after " << written << " of " << free_bytes << " free bytes: " << std::strerror(err);
  EXPECT_GE(written + (8 << 20), free_bytes) << "ENOSPC long before the volume was full";
  // With the page cache, pages written before the failing write did not
  // all fit: fsync says so (the kernel recorded the refused writebacks)
  // rather than succeed. Without it, nothing unwritten was accepted.
  const Outcome expected = GetParam() == "writeback" ? Outcome{-1, ENOSPC} : Outcome{0, 0};
  EXPECT_EQ(outcome(::fsync(fd.get())), expected);
  fd.reset();
  const struct statvfs full = statfs_of(volume_->mountpoint());
  EXPECT_LT(uint64_t{full.f_bavail} * full.f_frsize, uint64_t{8} << 20) << "statfs does not show the volume full";

  // Still serving: reads work, and small metadata changes too.
  Fd in(::open(at("fill").c_str(), O_RDONLY));
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(read_at(in.get(), chunk.size(), 0) == chunk);
  in.reset();
  ASSERT_EQ(::mkdir(at("still-works").c_str(), 0755), 0);

  ASSERT_EQ(::unlink(at("fill").c_str()), 0);
  // RELEASE reaches the daemon asynchronously; the unlinked file's space is
  // free at the latest once its last reference is gone. Write what fits
  // again, in a second file, and read it back.
  Fd again(::open(at("again").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(again.ok());
  const std::string data = pattern(32 << 20, 2);
  ASSERT_TRUE(write_at(again.get(), data, 0)) << std::strerror(errno);
  ASSERT_EQ(::fsync(again.get()), 0) << std::strerror(errno);
  EXPECT_TRUE(read_at(again.get(), data.size(), 0) == data);
}

// Allocates the rest of the volume to `fd`, from `offset` on, with
// fallocate (metadata only: no data to write); returns how many bytes.
uint64_t allocate_the_rest(int fd) {
  uint64_t at = 0;
  for (uint64_t step = uint64_t{64} << 20; step >= 4096; step /= 4) {
    while (::fallocate(fd, 0, static_cast<off_t>(at), static_cast<off_t>(step)) == 0) at += step;
    if (errno != ENOSPC) return 0;
  }
  return at;
}

// The space of a file whose last name is gone is free once its last open
// closes, as on ext4 (whose close frees it before returning): a program
// that deletes a full file and at once writes another as large gets no
// ENOSPC, although the kernel sends the daemon the file's RELEASE after
// close(2) has returned. While the file is open, its space stays taken.
TEST_P(SpaceTest, AnUnlinkedFilesSpaceIsWritableRightAfterItsLastClose) {
  Fd fill(::open(at("fill").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(fill.ok());
  const uint64_t taken = allocate_the_rest(fill.get());
  ASSERT_GT(taken, uint64_t{64} << 20) << std::strerror(errno);
  ASSERT_EQ(::unlink(at("fill").c_str()), 0);
  {
    Fd early(::open(at("early").c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_TRUE(early.ok());
    EXPECT_EQ(outcome(::fallocate(early.get(), 0, 0, 16 << 20)), (Outcome{-1, ENOSPC}))
        << "the open unlinked file's space was handed out";
  }
  ASSERT_EQ(::unlink(at("early").c_str()), 0);
  fill.reset();  // its last close: RELEASE follows, asynchronously
  const std::string data = pattern(taken - (uint64_t{16} << 20), 3);
  Fd next(::open(at("next").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(write_at(next.get(), data, 0)) << std::strerror(errno);
  ASSERT_EQ(::fsync(next.get()), 0) << std::strerror(errno);
  EXPECT_TRUE(read_at(next.get(), data.size(), 0) == data);
}

PEREGRINE_FOR_CACHE_MODES(SpaceTest);

}  // namespace
}  // namespace peregrine::fstest
