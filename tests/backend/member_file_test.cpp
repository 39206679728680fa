// MemberFile: opening members, refusing what cannot be a member, aligned IO.
#include "peregrine/backend/member_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "peregrine/util/aligned_buffer.h"

namespace peregrine {
namespace {

namespace fs = std::filesystem;

class MemberFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/peregrine-member-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(MemberFileTest, ReportsSizeOfRegularFile) {
  std::string path = dir_ + "/m0";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  fs::resize_file(path, 1 << 20);
  auto m = MemberFile::open(path, MemberFile::Mode::read_write);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->info().size_bytes, 1u << 20);
  EXPECT_FALSE(m->info().is_block_device);
  EXPECT_EQ(m->info().logical_block_size, 4096u);
}

TEST_F(MemberFileTest, MissingMemberIsNamedInTheError) {
  auto m = MemberFile::open(dir_ + "/absent", MemberFile::Mode::read_only);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find(dir_ + "/absent"), std::string::npos);
  EXPECT_EQ(m.status().errnum(), ENOENT);
}

TEST_F(MemberFileTest, DirectoryIsRefused) {
  auto m = MemberFile::open(dir_, MemberFile::Mode::read_only);
  ASSERT_FALSE(m);
  EXPECT_NE(m.status().message().find("not a regular file or block device"), std::string::npos);
}

TEST_F(MemberFileTest, AlignedWriteReadsBack) {
  std::string path = dir_ + "/m0";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  fs::resize_file(path, 1 << 20);
  auto m = MemberFile::open(path, MemberFile::Mode::read_write);
  ASSERT_TRUE(m);
  AlignedBuffer out(8192), in(8192);
  for (size_t i = 0; i < out.size(); ++i) out.data()[i] = std::byte(i * 7 + 3);
  ASSERT_EQ(m->pwrite_full(out.data(), out.size(), 65536), 0);
  ASSERT_EQ(m->pread_full(in.data(), in.size(), 65536), 0);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
  // Reading past the end is an error, not silent zeros.
  EXPECT_EQ(m->pread_full(in.data(), 4096, 1 << 20), -EIO);
}

// A member file on tmpfs is memory-backed (the engine then copies inline
// instead of going through io_uring's worker threads); one on a disk
// filesystem is not.
bool on_fs_type(const std::string& dir, std::initializer_list<long> types) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return false;
  for (long t : types)
    if (static_cast<long>(s.f_type) == t) return true;
  return false;
}

void expect_memory_backed(const std::string& base, bool expected) {
  std::string dir = base + "/peregrine-member-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  std::string path = dir + "/m0";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  fs::resize_file(path, 1 << 20);
  auto m = MemberFile::open(path, MemberFile::Mode::read_write);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->info().memory_backed, expected) << path;
  // A member file on ext4 or XFS is opened once more for reads through
  // its page cache: the same file, read-only, without O_DIRECT; for
  // inspection it is not. One in memory is its own page cache.
  const bool cached_reads = on_fs_type(base, {EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC});
  if (!cached_reads) {
    EXPECT_EQ(m->page_cache_fd(), -1) << path;
  } else {
    ASSERT_GE(m->page_cache_fd(), 0) << path;
    struct stat a {}, b {};
    ASSERT_EQ(::fstat(m->fd(), &a), 0);
    ASSERT_EQ(::fstat(m->page_cache_fd(), &b), 0);
    EXPECT_EQ(a.st_dev, b.st_dev);
    EXPECT_EQ(a.st_ino, b.st_ino);
    const int flags = ::fcntl(m->page_cache_fd(), F_GETFL);
    EXPECT_EQ(flags & O_DIRECT, 0);
    EXPECT_EQ(flags & O_ACCMODE, O_RDONLY);
    EXPECT_EQ(::fcntl(m->fd(), F_GETFL) & O_DIRECT, O_DIRECT);
    auto ro = MemberFile::open(path, MemberFile::Mode::read_only);
    ASSERT_TRUE(ro) << ro.status().message();
    EXPECT_GE(ro->page_cache_fd(), 0) << "a read-only mount reads through it too";
    auto looked_at = MemberFile::open(path, MemberFile::Mode::inspect);
    ASSERT_TRUE(looked_at) << looked_at.status().message();
    EXPECT_EQ(looked_at->page_cache_fd(), -1);
  }
  fs::remove_all(dir);
}

TEST(MemberFileKind, FileOnTmpfsIsMemoryBacked) {
  if (!on_fs_type("/dev/shm", {TMPFS_MAGIC})) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  expect_memory_backed("/dev/shm", true);
}

TEST(MemberFileKind, FileOnDiskFilesystemIsNot) {
  if (on_fs_type("/var/tmp", {TMPFS_MAGIC, RAMFS_MAGIC})) GTEST_SKIP() << "/var/tmp is in memory here";
  expect_memory_backed("/var/tmp", false);
}

}  // namespace
}  // namespace peregrine
