// MemberCopy on two file members: the copy holds the source's bytes at the
// same offsets, the source's holes read as zeros on the target and stay
// holes (junk there before is gone), and verify() notices a byte that
// changed after the copy, in data and in a hole.
#include "peregrine/volume/member_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string bytes(const std::string& path, uint64_t offset, uint64_t len) {
  std::string out(len, '\0');
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, out.data(), len, static_cast<off_t>(offset)), static_cast<ssize_t>(len));
  ::close(fd);
  return out;
}

void put(const std::string& path, uint64_t offset, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

std::string noise(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 131 + (i >> 12));
  return s;
}

class MemberCopyTest : public VolumeTest {
 protected:
  // Source: data at [1M, 5M + 8K) and [9M, 9M + 12K), holes elsewhere.
  // Target: junk everywhere.
  void SetUp() override {
    VolumeTest::SetUp();
    src_ = make_file("src", 20 * kMiB);
    put(src_, kMiB, noise(4 * kMiB + 8192, 1));
    put(src_, 9 * kMiB, noise(12288, 2));
    dst_ = make_file("dst", 20 * kMiB, 'J');
  }
  std::string src_, dst_;
};

TEST_F(MemberCopyTest, CopiesDataZeroesHolesAndVerifies) {
  auto from = MemberFile::open(src_, MemberFile::Mode::read_write);
  auto to = MemberFile::open(dst_, MemberFile::Mode::read_write);
  ASSERT_TRUE(from && to);
  MemberCopy c(*from, *to, CopyTuning{1 << 20, 4});
  const CopyRange ranges[] = {{4096, 512 * 1024}, {516 * 1024, 16 * kMiB}};
  uint64_t last_done = 0, last_total = 0;
  Status s = c.copy(ranges, [&](uint64_t d, uint64_t t) {
    EXPECT_GE(d, last_done);
    last_done = d;
    last_total = t;
  });
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(c.data_bytes(), 4 * kMiB + 8192 + 12288);
  EXPECT_EQ(c.data_bytes() + c.hole_bytes(), 16 * kMiB - 4096 - 4096);
  ASSERT_EQ(to->sync(), 0);
  Status v = c.verify({});
  ASSERT_TRUE(v) << v.message();

  EXPECT_EQ(bytes(dst_, 4096, 508 * 1024), std::string(508 * 1024, '\0'));
  EXPECT_EQ(bytes(dst_, kMiB, 4 * kMiB + 8192), bytes(src_, kMiB, 4 * kMiB + 8192));
  EXPECT_EQ(bytes(dst_, 9 * kMiB, 12288), bytes(src_, 9 * kMiB, 12288));
  EXPECT_EQ(bytes(dst_, 5 * kMiB + 8192, 4 * kMiB - 8192), std::string(4 * kMiB - 8192, '\0'));
  // Outside the ranges nothing was touched: the superblock blocks and the tail.
  EXPECT_EQ(bytes(dst_, 0, 4096), std::string(4096, 'J'));
  EXPECT_EQ(bytes(dst_, 512 * 1024, 4096), std::string(4096, 'J'));
  EXPECT_EQ(bytes(dst_, 16 * kMiB, 4096), std::string(4096, 'J'));
  // The holes are holes: what is allocated is the data, the two untouched
  // blocks and the untouched tail.
  struct stat st {};
  ASSERT_EQ(::stat(dst_.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 4 * kMiB + 8192 + 12288 + 8192 + 4 * kMiB + 64 * 1024);

  // A byte changed in the copied data, then one in a hole: both noticed.
  put(dst_, 3 * kMiB + 5, "x");
  Status bad = c.verify({});
  EXPECT_FALSE(bad);
  EXPECT_NE(bad.message().find("does not read back as written at offset 3145728"), std::string::npos) << bad.message();
  put(dst_, 3 * kMiB + 5, bytes(src_, 3 * kMiB + 5, 1));
  ASSERT_TRUE(c.verify({}));
  put(dst_, 7 * kMiB, "y");
  EXPECT_FALSE(c.verify({}));
}

TEST_F(MemberCopyTest, AWriteErrorFailsNamingTheMember) {
  auto from = MemberFile::open(src_, MemberFile::Mode::read_write);
  ASSERT_EQ(::truncate(dst_.c_str(), 2 * kMiB), 0);
  auto to = MemberFile::open(dst_, MemberFile::Mode::read_only);
  ASSERT_TRUE(from && to);
  MemberCopy c(*from, *to);
  const CopyRange ranges[] = {{4096, 16 * kMiB}};
  Status s = c.copy(ranges, {});
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("member " + dst_ + ": cannot "), std::string::npos) << s.message();
}

// On tmpfs the chunks go through plain system calls, not io_uring: the
// same bytes, the same checks.
TEST(MemberCopyTmpfs, CopiesAndVerifiesWithoutIoUring) {
  char tmpl[] = "/dev/shm/peregrine-copy-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) GTEST_SKIP() << "no /dev/shm";
  const std::string dir = tmpl, src = dir + "/src", dst = dir + "/dst";
  ASSERT_EQ(::close(::open(src.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::truncate(src.c_str(), 12 * kMiB), 0);
  put(src, 2 * kMiB, noise(3 * kMiB + 4096, 5));
  ASSERT_EQ(::close(::open(dst.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::truncate(dst.c_str(), 12 * kMiB), 0);
  put(dst, 8 * kMiB, noise(kMiB, 6));  // junk in what is a hole of the source
  {
    auto from = MemberFile::open(src, MemberFile::Mode::read_write);
    auto to = MemberFile::open(dst, MemberFile::Mode::read_write);
    ASSERT_TRUE(from && to) << (from ? to.status().message() : from.status().message());
    if (!from->info().memory_backed) GTEST_SKIP() << "/dev/shm is not tmpfs";
    MemberCopy c(*from, *to);
    const CopyRange ranges[] = {{4096, 12 * kMiB}};
    ASSERT_TRUE(c.copy(ranges, {}));
    EXPECT_EQ(c.data_bytes(), 3 * kMiB + 4096);
    ASSERT_TRUE(c.verify({}));
    EXPECT_EQ(bytes(dst, 2 * kMiB, 3 * kMiB + 4096), bytes(src, 2 * kMiB, 3 * kMiB + 4096));
    EXPECT_EQ(bytes(dst, 8 * kMiB, kMiB), std::string(kMiB, '\0'));
    put(dst, 4 * kMiB + 100, "z");
    EXPECT_FALSE(c.verify({}));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace peregrine::test
