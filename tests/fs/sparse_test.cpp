// Sparse files: holes read as zeros and SEEK_DATA/SEEK_HOLE find them;
// fallocate allocates (with and without KEEP_SIZE) and punches holes. Side
// by side with a native directory; data regions are 1 MiB aligned so the
// answers do not depend on either filesystem's allocation granularity.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class SparseTest : public CacheModes<SideBySideTest> {};

constexpr off_t kMiB = 1 << 20;

// Writes 1 MiB at 0 and at 4 MiB of an 8 MiB file, synced.
Outcome make_sparse(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
  bool ok = fd.ok() && write_at(fd.get(), pattern(kMiB, 1), 0) && write_at(fd.get(), pattern(kMiB, 2), 4 * kMiB) &&
            ::ftruncate(fd.get(), 8 * kMiB) == 0 && ::fsync(fd.get()) == 0;
  return outcome(ok ? 0 : -1);
}

Outcome seek(const std::string& path, off_t off, int whence) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  return outcome(::lseek(fd.get(), off, whence));
}

// With fuse.cache=writeback the kernel does not write dirty pages back
// before it asks the daemon about holes, so peregrine leaves SEEK_DATA and
// SEEK_HOLE to the kernel there: the whole file is data, and the one hole
// is at the end. Never wrong, only blind to holes.
bool holes_are_seen(const std::string& cache) { return cache != "writeback"; }

TEST_P(SparseTest, DirtyDataIsNeverAHole) {
  // Not synced: in writeback mode the data is only in the page cache.
  for (const std::string& root : {native_->path(), volume_->mountpoint()}) {
    Fd fd(::open((root + "/dirty").c_str(), O_RDWR | O_CREAT, 0644));
    ASSERT_TRUE(fd.ok() && write_at(fd.get(), pattern(4096, 9), kMiB));
    const off_t data = ::lseek(fd.get(), 0, SEEK_DATA);
    EXPECT_GE(data, 0) << root << ": " << std::strerror(errno);
    EXPECT_LE(data, kMiB) << root;
    const off_t hole = ::lseek(fd.get(), kMiB, SEEK_HOLE);
    EXPECT_EQ(hole, kMiB + 4096) << root << ": the data at 1 MiB is not a hole";
  }
}

TEST_P(SparseTest, HolesReadAsZerosAndSeekFindsThem) {
  if (!holes_are_seen(GetParam())) {
    ASSERT_EQ(make_sparse(at("s")), Outcome{});
    EXPECT_EQ(seek(at("s"), 2 * kMiB, SEEK_DATA).ret, 2 * kMiB);
    EXPECT_EQ(seek(at("s"), 0, SEEK_HOLE).ret, 8 * kMiB);
    EXPECT_EQ(seek(at("s"), 9 * kMiB, SEEK_DATA).err, ENXIO);
    EXPECT_EQ(read_file(at("s")).substr(4 * kMiB, kMiB), pattern(kMiB, 2));
    return;
  }
  same("make sparse", [](const std::string& r) { return make_sparse(r + "/s"); });
  EXPECT_EQ(same("SEEK_DATA 0", [](const std::string& r) { return seek(r + "/s", 0, SEEK_DATA); }).ret, 0);
  EXPECT_EQ(same("SEEK_HOLE 0", [](const std::string& r) { return seek(r + "/s", 0, SEEK_HOLE); }).ret, kMiB);
  EXPECT_EQ(same("SEEK_DATA in the hole", [](const std::string& r) { return seek(r + "/s", 2 * kMiB, SEEK_DATA); }).ret,
            4 * kMiB);
  EXPECT_EQ(same("SEEK_HOLE in data", [](const std::string& r) { return seek(r + "/s", 4 * kMiB + 5, SEEK_HOLE); }).ret,
            5 * kMiB);
  same("SEEK_DATA in the trailing hole: ENXIO",
       [](const std::string& r) { return seek(r + "/s", 6 * kMiB, SEEK_DATA); });
  EXPECT_EQ(
      same("SEEK_HOLE in the trailing hole", [](const std::string& r) { return seek(r + "/s", 6 * kMiB, SEEK_HOLE); })
          .ret,
      6 * kMiB);
  same("SEEK_DATA past EOF: ENXIO", [](const std::string& r) { return seek(r + "/s", 9 * kMiB, SEEK_DATA); });

  std::string got = read_file(at("s"));
  ASSERT_EQ(got.size(), size_t(8 * kMiB));
  EXPECT_TRUE(got.compare(0, kMiB, pattern(kMiB, 1)) == 0);
  EXPECT_TRUE(got.compare(4 * kMiB, kMiB, pattern(kMiB, 2)) == 0);
  EXPECT_EQ(got.find_first_not_of('\0', kMiB), size_t(4 * kMiB));
  EXPECT_EQ(got.find_first_not_of('\0', 5 * kMiB), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat(at("s").c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, 4 * kMiB) << "holes must not be allocated";
  EXPECT_GE(st.st_blocks * 512, 2 * kMiB);
  expect_same_trees();
}

// st_blocks of a file still open after a write and an fsync: what tar
// --sparse and cp --sparse=auto take to tell a sparse file (st_blocks 0
// means "all holes" to tar). With fuse.cache=writeback the kernel cached
// the count of before the write and kept it until the file was closed.
TEST_P(SparseTest, BlocksCountedAtOnceAfterAWriteAndFsync) {
  Outcome o = same("blocks after write + fsync, still open", [](const std::string& r) {
    Fd fd(::open((r + "/w").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
    struct stat before;
    if (!fd.ok() || ::fstat(fd.get(), &before) != 0) return outcome(-1);  // the count is cached now
    if (!write_at(fd.get(), pattern(kMiB, 3), 0) || ::fsync(fd.get()) != 0) return outcome(-1);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return outcome(-1);
    return outcome(st.st_blocks);
  });
  EXPECT_EQ(o.ret, kMiB / 512);
  // And through another path (stat(2) by name) while it is still open.
  o = same("blocks by name after an append + fsync", [](const std::string& r) {
    Fd fd(::open((r + "/w").c_str(), O_RDWR | O_APPEND));
    if (!fd.ok() || !write_at(fd.get(), pattern(kMiB, 4), kMiB) || ::fsync(fd.get()) != 0) return outcome(-1);
    struct stat st;
    if (::stat((r + "/w").c_str(), &st) != 0) return outcome(-1);
    return outcome(st.st_blocks);
  });
  EXPECT_EQ(o.ret, 2 * kMiB / 512);
}

TEST_P(SparseTest, FallocateModes) {
  same("create", [](const std::string& r) { return outcome(write_file(r + "/f", pattern(2 * kMiB, 3)) ? 0 : -1); });
  same("allocate past EOF (extends)", [](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_RDWR));
    return outcome(::fallocate(fd.get(), 0, 2 * kMiB, kMiB));
  });
  same("size after allocate", [](const std::string& r) {
    struct stat st;
    return ::stat((r + "/f").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_size);
  });
  same("KEEP_SIZE past EOF", [](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_RDWR));
    return outcome(::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 3 * kMiB, 2 * kMiB));
  });
  Outcome size = same("size unchanged by KEEP_SIZE", [](const std::string& r) {
    struct stat st;
    return ::stat((r + "/f").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_size);
  });
  EXPECT_EQ(size.ret, 3 * kMiB);
  struct stat st;
  ASSERT_EQ(::stat(at("f").c_str(), &st), 0);
  EXPECT_GE(st.st_blocks * 512, 5 * kMiB) << "KEEP_SIZE must still allocate the blocks";
  same("punch a hole", [](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_RDWR));
    return outcome(::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kMiB / 2 + 1000, kMiB));
  });
  same("punch without KEEP_SIZE: EOPNOTSUPP", [](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_RDWR));
    return outcome(::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE, 0, kMiB));
  });
  std::string got = read_file(at("f"));
  std::string want = pattern(2 * kMiB, 3) + std::string(kMiB, '\0');
  std::fill(want.begin() + kMiB / 2 + 1000, want.begin() + kMiB / 2 + 1000 + kMiB, '\0');
  EXPECT_TRUE(got == want) << "punched or allocated ranges must read as zeros, the rest unchanged";
  // The punched range is a hole (where exactly it starts depends on the
  // allocation granularity, so this is not compared with the native side).
  Outcome hole = seek(at("f"), 0, SEEK_HOLE);
  EXPECT_GE(hole.ret, kMiB / 2 + 1000);
  if (holes_are_seen(GetParam())) {
    EXPECT_LT(hole.ret, kMiB / 2 + 1000 + kMiB);
  }
  expect_same_trees();
}

PEREGRINE_FOR_CACHE_MODES(SparseTest);

}  // namespace
}  // namespace peregrine::fstest
