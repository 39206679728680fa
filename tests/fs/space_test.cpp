// Space accounting: statfs follows the allocator, a full volume returns
// ENOSPC cleanly (the daemon keeps serving), and space freed by deleting
// files can be written again.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "fs_test_util.h"
#include "peregrine/fs/open_files_xattr.h"

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

// Whether the daemon has taken the RELEASE of every handle of `name` (a
// file in the root) opened for writing: the kernel sends it after close(2)
// returned. Polls the daemon's list of such files for up to 10 s.
bool released_for_writing(const std::string& root, const std::string& name) {
  const std::string record = "\t" + name + std::string(1, '\0');
  for (int i = 0; i < 10000; ++i) {
    std::string page(fs::kOpenFilesPageBytes, '\0');
    const ssize_t n = ::getxattr(root.c_str(), fs::kOpenFilesXattr, page.data(), page.size());
    if (n < 0) return false;
    page.resize(static_cast<size_t>(n));
    if (page.find(record) == std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A writeback refused for want of space is the writer's to be told: a
// reader of the same file (`tail -f`: a read past its end) is answered as
// ever, and once the last writer closed, a new writer starts clean even
// while the reader keeps the file open. A reader's read asks the daemon
// for the file's size (with its own handle) once the kernel's attributes
// have expired: an hour by default, at once here.
class RefusedWritebackTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.cache=writeback,fuse.attr_timeout_s=0"}; }
};

TEST_F(RefusedWritebackTest, TheWriterIsToldNotAReader) {
  {
    Fd ballast(::open(at("ballast").c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_TRUE(ballast.ok());
    ASSERT_TRUE(write_at(ballast.get(), pattern(32 << 20, 4), 0));
    ASSERT_EQ(::fsync(ballast.get()), 0);
  }
  const struct statvfs before = statfs_of(volume_->mountpoint());
  const uint64_t free_bytes = uint64_t{before.f_bavail} * before.f_frsize;
  Fd writer(::open(at("log").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_TRUE(writer.ok());
  const std::string chunk = pattern(1 << 20, 5);
  uint64_t written = 0;
  while (written <= free_bytes + (uint64_t{1} << 30)) {
    ssize_t n = ::write(writer.get(), chunk.data(), chunk.size());
    if (n < 0) break;
    written += static_cast<uint64_t>(n);
  }
  ASSERT_EQ(errno, ENOSPC) << "after " << written << " bytes";
  // Every writeback under way refused (fsync waits for them), and their
  // refusal told to a write(2): then no writeback is left to refuse more.
  EXPECT_EQ(outcome(::fsync(writer.get())), (Outcome{-1, ENOSPC}));
  const std::string page = pattern(4096, 8);
  int tries = 0;
  while (::pwrite(writer.get(), page.data(), page.size(), static_cast<off_t>(written)) < 0 && ++tries < 3) {
    ASSERT_EQ(errno, ENOSPC);
  }
  ASSERT_LT(tries, 3) << "write(2) kept failing once the refusals were told";
  // More pages in one write(2), refused at the fsync's writeback: a refusal
  // the writer has not been told of at a write(2).
  ASSERT_TRUE(write_at(writer.get(), pattern(16 << 20, 6), written)) << std::strerror(errno);
  ASSERT_EQ(outcome(::fsync(writer.get())), (Outcome{-1, ENOSPC}));

  Fd reader(::open(at("log").c_str(), O_RDONLY));
  ASSERT_TRUE(reader.ok());
  char byte;
  EXPECT_GE(::pread(reader.get(), &byte, 1, static_cast<off_t>(written) + (64 << 20)), 0)
      << "a reader's read past the end met the writer's refusal: " << std::strerror(errno);
  EXPECT_EQ(outcome(::pwrite(writer.get(), page.data(), page.size(), static_cast<off_t>(written))),
            (Outcome{-1, ENOSPC}))
      << "the writer was not told at its next write(2)";
  // Pages its close writes back, refused: the close says so, and is the
  // last writer's.
  ASSERT_TRUE(write_at(writer.get(), pattern(16 << 20, 9), written)) << std::strerror(errno);
  EXPECT_EQ(outcome(writer.close()), (Outcome{-1, ENOSPC}));
  ASSERT_TRUE(released_for_writing(volume_->mountpoint(), "log"));
  // The kernel hands a writeback error no fsync has seen to the next fsync
  // on any descriptor of the file (as on ext4): this one sees it.
  ::fsync(reader.get());
  ASSERT_EQ(::unlink(at("ballast").c_str()), 0);
  Fd next(::open(at("log").c_str(), O_WRONLY | O_APPEND));
  ASSERT_TRUE(next.ok());
  const std::string line = pattern(4096, 7);
  EXPECT_EQ(::write(next.get(), line.data(), line.size()), ssize_t(line.size()))
      << "a new writer met the last one's refusal: " << std::strerror(errno);
  EXPECT_EQ(::fsync(next.get()), 0) << std::strerror(errno);
  const off_t end = ::lseek(reader.get(), 0, SEEK_END);
  ASSERT_GE(end, off_t(line.size()));
  EXPECT_TRUE(read_at(reader.get(), line.size(), static_cast<uint64_t>(end) - line.size()) == line);
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
