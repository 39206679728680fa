// Access times as ext4 keeps them with its default relatime, side by side
// with the native directory (ext4 under /tmp, mounted relatime): a read or
// a listing updates an atime that is not newer than mtime or ctime, and
// leaves a newer one alone; noatime never updates, strictatime always.
// The times are placed with utimensat, so no test waits for a clock.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

constexpr time_t kPast = 1000000000;  // 2001

struct timespec atime_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_atim;
}

bool set_times(const std::string& path, time_t atime, time_t mtime) {
  struct timespec ts[2] = {{atime, 0}, {mtime, 0}};
  return ::utimensat(AT_FDCWD, path.c_str(), ts, 0) == 0;
}

bool read_all(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  char buf[4096];
  return fd.ok() && ::read(fd.get(), buf, sizeof buf) > 0;
}

bool list(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return false;
  while (::readdir(d) != nullptr) {
  }
  ::closedir(d);
  return true;
}

// The outcome of `access` on a file whose times were set first: 1 if it
// moved the atime, 0 if not.
Outcome moved(const std::string& path, time_t atime, time_t mtime, const std::function<bool()>& access) {
  if (!set_times(path, atime, mtime)) return outcome(-1);
  if (!access()) return outcome(-1);
  return Outcome{atime_of(path).tv_sec != atime ? 1 : 0, 0};
}

class AtimeTest : public SideBySideTest {};

TEST_F(AtimeTest, RelatimeAsOnExt4) {
  const time_t future = ::time(nullptr) + 3600;
  same("make a file and a directory", [&](const std::string& root) {
    return outcome(write_file(root + "/f", "data") && ::mkdir((root + "/d").c_str(), 0755) == 0 ? 0 : -1);
  });
  Outcome o = same("read with atime older than mtime", [&](const std::string& root) {
    return moved(root + "/f", kPast, kPast + 10, [&] { return read_all(root + "/f"); });
  });
  EXPECT_EQ(o.ret, 1);
  o = same("read with atime newer than mtime and ctime", [&](const std::string& root) {
    return moved(root + "/f", future, kPast, [&] { return read_all(root + "/f"); });
  });
  EXPECT_EQ(o.ret, 0);
  o = same("list with atime older than mtime", [&](const std::string& root) {
    return moved(root + "/d", kPast, kPast + 10, [&] { return list(root + "/d"); });
  });
  EXPECT_EQ(o.ret, 1);
  o = same("list with atime newer than mtime and ctime", [&](const std::string& root) {
    return moved(root + "/d", future, kPast, [&] { return list(root + "/d"); });
  });
  EXPECT_EQ(o.ret, 0);
  // The new atime is now, not some other time.
  ASSERT_TRUE(set_times(at("f"), kPast, kPast + 10));
  const time_t before = ::time(nullptr);
  ASSERT_TRUE(read_all(at("f")));
  EXPECT_GE(atime_of(at("f")).tv_sec, before);
}

// A read or a listing through a descriptor opened with O_NOATIME (root
// may ask for it) is no access: not at the open, and not when the read
// reaches the daemon because the page cache held nothing (dropped first).
bool read_noatime(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOATIME));
  char buf[4096];
  return fd.ok() && ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) == 0 &&
         ::read(fd.get(), buf, sizeof buf) > 0;
}

bool list_noatime(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOATIME);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) return false;
  while (::readdir(d) != nullptr) {
  }
  ::closedir(d);
  return true;
}

TEST_F(AtimeTest, AnONoatimeReadOrListingLeavesTheAtimeAsOnExt4) {
  same("make a file and a directory", [&](const std::string& root) {
    return outcome(write_file(root + "/f", pattern(64 << 10, 3)) && ::mkdir((root + "/d").c_str(), 0755) == 0 &&
                           write_file(root + "/d/e", "x")
                       ? 0
                       : -1);
  });
  Outcome o = same("O_NOATIME read with atime older than mtime", [&](const std::string& root) {
    return moved(root + "/f", kPast, kPast + 10, [&] { return read_noatime(root + "/f"); });
  });
  EXPECT_EQ(o.ret, 0);
  o = same("O_NOATIME listing with atime older than mtime", [&](const std::string& root) {
    return moved(root + "/d", kPast, kPast + 10, [&] { return list_noatime(root + "/d"); });
  });
  EXPECT_EQ(o.ret, 0);
  // And without O_NOATIME the same read does move it: the check can fail.
  o = same("plain read with atime older than mtime", [&](const std::string& root) {
    return moved(root + "/f", kPast, kPast + 10, [&] { return read_all(root + "/f"); });
  });
  EXPECT_EQ(o.ret, 1);
}

TEST_F(AtimeTest, RelatimeUpdateSurvivesARemount) {
  ASSERT_TRUE(write_file(at("f"), "data"));
  ASSERT_TRUE(set_times(at("f"), kPast, kPast + 10));
  ASSERT_TRUE(read_all(at("f")));
  const time_t read_at = atime_of(at("f")).tv_sec;
  ASSERT_GT(read_at, kPast + 10);
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(atime_of(at("f")).tv_sec, read_at);
}

// fuse.cache=writeback: a read the page cache serves never reaches the
// daemon, so opening for reading counts as the access (generic/003).
class WritebackAtimeTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.cache=writeback"}; }
};

TEST_F(WritebackAtimeTest, AReadOfCachedDataUpdatesTheAtime) {
  ASSERT_TRUE(write_file(at("f"), "data"));
  ASSERT_TRUE(read_all(at("f")));  // the pages are cached now
  EXPECT_EQ(moved(at("f"), kPast, kPast + 10, [&] { return read_all(at("f")); }), (Outcome{1, 0}));
  const time_t future = ::time(nullptr) + 3600;
  EXPECT_EQ(moved(at("f"), future, kPast, [&] { return read_all(at("f")); }), (Outcome{0, 0}));
}

class NoatimeTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "noatime"}; }
};

TEST_F(NoatimeTest, ReadsAndListingsLeaveTheAtime) {
  ASSERT_TRUE(write_file(at("f"), "data"));
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  EXPECT_EQ(moved(at("f"), kPast, kPast + 10, [&] { return read_all(at("f")); }), (Outcome{0, 0}));
  EXPECT_EQ(moved(at("d"), kPast, kPast + 10, [&] { return list(at("d")); }), (Outcome{0, 0}));
}

class StrictatimeTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "strictatime"}; }
};

TEST_F(StrictatimeTest, EveryReadUpdatesTheAtime) {
  ASSERT_TRUE(write_file(at("f"), "data"));
  const time_t future = ::time(nullptr) + 3600;
  EXPECT_EQ(moved(at("f"), future, kPast, [&] { return read_all(at("f")); }), (Outcome{1, 0}));
  EXPECT_LT(atime_of(at("f")).tv_sec, future);
}

// The second listing comes from the kernel's cache of the directory
// (fs_dir.cpp): it updates the atime all the same.
TEST_F(StrictatimeTest, EveryListingUpdatesTheAtimeEvenFromTheKernelsCache) {
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("d/f"), "data"));
  ASSERT_TRUE(list(at("d")));
  for (int i = 0; i < 2; ++i) {
    // The atime alone, so that the cached listing stays valid.
    struct timespec ts[2] = {{kPast, 0}, {0, UTIME_OMIT}};
    ASSERT_EQ(::utimensat(AT_FDCWD, at("d").c_str(), ts, 0), 0);
    ASSERT_TRUE(list(at("d")));
    EXPECT_GT(atime_of(at("d")).tv_sec, kPast) << "listing " << i;
  }
}

}  // namespace
}  // namespace peregrine::fstest
