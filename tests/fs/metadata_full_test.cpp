// Running out of metadata space: creating files in a volume whose metadata
// area is full fails cleanly with ENOSPC, statfs counts the files that can
// still be created (and says 0 when creates fail), existing files can still
// be rewritten and grown, deleting files makes room again, and the daemon
// can still checkpoint at unmount (exit 0) with every file there at the
// next mount and fsck clean.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using MetadataFullTest = MountedTest;  // 4 x 64M: the minimum 16 MiB metadata area

// Names of one length, so every file costs the metadata area the same.
std::string entry(int i) {
  char name[64];
  std::snprintf(name, sizeof name, "many/entry-%07d-with-a-longer-name", i);
  return name;
}

struct statvfs statfs_of(const std::string& path) {
  struct statvfs s {};
  EXPECT_EQ(::statvfs(path.c_str(), &s), 0) << std::strerror(errno);
  return s;
}

// Creates entries from `first` until one fails; returns how many were
// created and the errno of the failure in *err.
int create_until_failure(const std::string& mnt, int first, int* err, const std::function<void(int)>& each = {}) {
  int created = 0;
  *err = 0;
  for (int i = first; i < first + 1000000; ++i) {
    if (each) each(created);
    if (::mknod((mnt + "/" + entry(i)).c_str(), S_IFREG | 0644, 0) != 0) {
      *err = errno;
      break;
    }
    ++created;
  }
  return created;
}

TEST_F(MetadataFullTest, CreatingTooManyFilesGivesEnospcAndUnmountsCleanly) {
  ASSERT_EQ(::mkdir(at("many").c_str(), 0755), 0);
  struct statvfs s = statfs_of(volume_->mountpoint());
  EXPECT_LE(s.f_ffree, s.f_files) << "statfs: more free inodes than inodes";
  int err = 0;
  const int created = create_until_failure(volume_->mountpoint(), 0, &err);
  EXPECT_EQ(err, ENOSPC) << "after " << created << " files: " << std::strerror(err);
  s = statfs_of(volume_->mountpoint());
  EXPECT_LE(s.f_ffree, s.f_files) << "statfs: more free inodes than inodes";
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "unmount of a full volume: wait status " << status;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(::access(at(entry(created - 1)).c_str(), F_OK), 0) << "the last file created before ENOSPC is gone";
}

TEST_F(MetadataFullTest, FullAreaKeepsExistingFilesWritableAndStatfsTrue) {
  const std::string mnt = volume_->mountpoint();
  ASSERT_EQ(::mkdir(at("many").c_str(), 0755), 0);
  // An existing file with written blocks, made before the area fills.
  const std::string before = pattern(1 << 20, 1);
  ASSERT_TRUE(write_file(at("data"), before));

  // (b) statfs: f_ffree is the number of files that can still be created.
  const struct statvfs empty = statfs_of(mnt);
  const uint64_t inodes_in_use = empty.f_files - empty.f_ffree;
  EXPECT_EQ(inodes_in_use, 3u) << "root, many, data";
  EXPECT_EQ(empty.f_favail, empty.f_ffree);
  struct statvfs half {};
  int half_at = -1;
  int err = 0;
  const int created = create_until_failure(mnt, 0, &err, [&](int done) {
    if (done == static_cast<int>(empty.f_ffree / 2)) {
      half = statfs_of(mnt);
      half_at = done;
    }
  });
  ASSERT_EQ(err, ENOSPC) << "after " << created << " files: " << std::strerror(err);
  ASSERT_GT(created, 1000);
  // Files like these cost ~131 bytes; an empty volume counts at 128 (the
  // documented minimum), so its count may be high by a few percent.
  EXPECT_NEAR(static_cast<double>(empty.f_ffree), created, created * 0.05)
      << "statfs on the empty volume promised " << empty.f_ffree << " files; " << created << " could be created";
  ASSERT_GE(half_at, 0);
  EXPECT_NEAR(static_cast<double>(half.f_ffree), created - half_at, created * 0.01)
      << "statfs half-way promised " << half.f_ffree << " more files; " << created - half_at << " could be created";
  EXPECT_EQ(half.f_files - half.f_ffree, inodes_in_use + half_at) << "f_files - f_ffree is the inodes in use";
  const struct statvfs full = statfs_of(mnt);
  EXPECT_EQ(full.f_ffree, 0u) << "creates fail, yet statfs says more files fit";
  EXPECT_EQ(full.f_favail, 0u);
  EXPECT_EQ(full.f_files, inodes_in_use + created);
  // df -h: the free blocks are still free, and still writable by the files
  // that exist (below).
  EXPECT_GT(full.f_bavail, 0u);

  // (a) Overwrites of written blocks of an existing file keep working: a
  // whole block, a partial block, and a rewrite across many blocks.
  {
    Fd fd(::open(at("data").c_str(), O_RDWR));
    ASSERT_TRUE(fd.ok()) << std::strerror(errno);
    std::string expect = before;
    const std::string a = pattern(4096, 2), b = pattern(100, 3), c = pattern(256 * 1024, 4);
    ASSERT_TRUE(write_at(fd.get(), a, 8192)) << "overwrite of a written block: " << std::strerror(errno);
    expect.replace(8192, a.size(), a);
    ASSERT_TRUE(write_at(fd.get(), b, 5000)) << "partial overwrite: " << std::strerror(errno);
    expect.replace(5000, b.size(), b);
    ASSERT_TRUE(write_at(fd.get(), c, 512 * 1024)) << "overwrite of 64 blocks: " << std::strerror(errno);
    expect.replace(512 * 1024, c.size(), c);
    ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
    // And the file can still grow: the area keeps room for new extents of
    // existing files after it stops taking new files.
    const std::string tail = pattern(64 * 1024, 5);
    ASSERT_TRUE(write_at(fd.get(), tail, static_cast<off_t>(expect.size()))) << "append: " << std::strerror(errno);
    expect += tail;
    ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
    EXPECT_TRUE(read_at(fd.get(), expect.size() + 1, 0) == expect) << "the rewritten file reads back wrong";
  }

  // (c) Deleting files makes room for as many new ones.
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(::unlink(at(entry(i)).c_str()), 0) << i << ": " << std::strerror(errno);
  const struct statvfs freed = statfs_of(mnt);
  EXPECT_NEAR(static_cast<double>(freed.f_ffree), 1000, 10) << "after deleting 1000 files";
  const int again = create_until_failure(mnt, created, &err);
  EXPECT_EQ(err, ENOSPC) << std::strerror(err);
  EXPECT_NEAR(again, 1000, 10) << "files created after deleting 1000";

  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  RunResult fsck = run({peregrine_bin(), "fsck", "-n", volume_->members()[0], volume_->members()[1],
                        volume_->members()[2], volume_->members()[3]});
  EXPECT_EQ(fsck.code, 0) << fsck.describe();
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(::access(at(entry(created + again - 1)).c_str(), F_OK), 0);
  EXPECT_EQ(::access(at(entry(999)).c_str(), F_OK), -1);
  std::string now = read_file(at("data"));
  EXPECT_EQ(now.size(), (1u << 20) + 64 * 1024);
}

}  // namespace
}  // namespace peregrine::fstest
