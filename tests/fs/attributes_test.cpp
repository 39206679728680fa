// chmod, chown and utimensat, and exactly which of mtime and ctime (of the
// file and of its directory) each operation changes, side by side with a
// native directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <functional>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class AttributesTest : public CacheModes<SideBySideTest> {};

bool after(const timespec& a, const timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}
bool equal(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

// Spins until the coarse clock (what native filesystems stamp with) is past
// `t`, so a timestamp set from now on differs from `t`. Not a sleep: it waits
// for the condition "the clock moved", at most one clock tick.
void clock_past(const timespec& t) {
  timespec now;
  do {
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  } while (!after(now, t));
}

// Which timestamps `op` changed, as bits: file mtime 1, file ctime 2,
// directory mtime 4, directory ctime 8 (-1 if the op or a stat failed).
Outcome changes(const std::string& root, const std::function<int(const std::string&)>& op) {
  struct stat f0, d0, f1, d1;
  // The file may be renamed to "f2" by an op: follow it by either name.
  auto stat_file = [&](struct stat* st) {
    return ::lstat((root + "/d/f").c_str(), st) == 0 || ::lstat((root + "/d/f2").c_str(), st) == 0;
  };
  std::string d = root + "/d";
  if (!stat_file(&f0) || ::lstat(d.c_str(), &d0) != 0) return outcome(-1);
  for (const timespec& t : {f0.st_mtim, f0.st_ctim, d0.st_mtim, d0.st_ctim}) clock_past(t);
  if (op(root) != 0) return outcome(-1);
  if (!stat_file(&f1)) return outcome(-1);
  if (::lstat(d.c_str(), &d1) != 0) return outcome(-1);
  return outcome(!equal(f0.st_mtim, f1.st_mtim) * 1 + !equal(f0.st_ctim, f1.st_ctim) * 2 +
                 !equal(d0.st_mtim, d1.st_mtim) * 4 + !equal(d0.st_ctim, d1.st_ctim) * 8);
}

TEST_P(AttributesTest, ChmodChownUtimens) {
  same("file", [](const std::string& r) { return outcome(write_file(r + "/f", "x", 0644) ? 0 : -1); });
  same("chmod", [](const std::string& r) { return outcome(::chmod((r + "/f").c_str(), 04751)); });
  same("mode", [](const std::string& r) {
    struct stat st;
    return ::stat((r + "/f").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_mode);
  });
  same("chown", [](const std::string& r) { return outcome(::chown((r + "/f").c_str(), 65534, 65534)); });
  same("owner and mode after chown (setuid cleared?)", [](const std::string& r) {
    struct stat st;
    return ::stat((r + "/f").c_str(), &st) < 0
               ? outcome(-1)
               : outcome(st.st_uid * 1000000L + st.st_gid + (static_cast<long>(st.st_mode) << 40));
  });
  same("chown -1 keeps", [](const std::string& r) { return outcome(::chown((r + "/f").c_str(), -1, 0)); });
  const timespec times[2] = {{1000000000, 123456789}, {1100000000, 987654321}};
  same("utimensat explicit",
       [&](const std::string& r) { return outcome(::utimensat(AT_FDCWD, (r + "/f").c_str(), times, 0)); });
  struct stat st;
  ASSERT_EQ(::stat(at("f").c_str(), &st), 0);
  EXPECT_TRUE(equal(st.st_atim, times[0])) << st.st_atim.tv_sec << "." << st.st_atim.tv_nsec;
  EXPECT_TRUE(equal(st.st_mtim, times[1])) << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
  const timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  timespec before;
  ::clock_gettime(CLOCK_REALTIME_COARSE, &before);
  ASSERT_EQ(::utimensat(AT_FDCWD, at("f").c_str(), omit_now, 0), 0);
  ASSERT_EQ(::stat(at("f").c_str(), &st), 0);
  EXPECT_TRUE(equal(st.st_atim, times[0])) << "UTIME_OMIT changed atime";
  EXPECT_FALSE(after(before, st.st_mtim)) << "UTIME_NOW set an old mtime";
  same("chmod a missing file: ENOENT", [](const std::string& r) { return outcome(::chmod((r + "/nope").c_str(), 0)); });
  same("symlink", [](const std::string& r) { return outcome(::symlink("f", (r + "/l").c_str())); });
  same("lchown a symlink", [](const std::string& r) { return outcome(::lchown((r + "/l").c_str(), 65534, 65534)); });
  expect_same_trees();
}

// The operations whose timestamp effects POSIX specifies. (Not here:
// truncate to the same size, where POSIX requires nothing; ext4 updates
// mtime and ctime, and so does peregrine with fuse.cache=direct, but not with
// writeback.)
TEST_P(AttributesTest, WhichTimestampsChange) {
  same("setup", [](const std::string& r) {
    return outcome(::mkdir((r + "/d").c_str(), 0755) == 0 && write_file(r + "/d/f", pattern(10000, 1)) ? 0 : -1);
  });
  struct Case {
    const char* what;
    std::function<int(const std::string&)> op;
  };
  const Case cases[] = {
      {"read", [](const std::string& r) { return read_file(r + "/d/f").size() == 10000 ? 0 : -1; }},
      {"write",
       [](const std::string& r) {
         Fd fd(::open((r + "/d/f").c_str(), O_WRONLY));
         return write_at(fd.get(), std::string("abc"), 5000) ? 0 : -1;
       }},
      {"truncate", [](const std::string& r) { return ::truncate((r + "/d/f").c_str(), 9000); }},
      {"open O_TRUNC",
       [](const std::string& r) {
         int fd = ::open((r + "/d/f").c_str(), O_WRONLY | O_TRUNC);
         return fd < 0 ? -1 : ::close(fd);
       }},
      {"chmod", [](const std::string& r) { return ::chmod((r + "/d/f").c_str(), 0600); }},
      {"chown", [](const std::string& r) { return ::chown((r + "/d/f").c_str(), 1, 1); }},
      {"setxattr", [](const std::string& r) { return ::setxattr((r + "/d/f").c_str(), "user.a", "b", 1, 0); }},
      {"link", [](const std::string& r) { return ::link((r + "/d/f").c_str(), (r + "/d/g").c_str()); }},
      {"unlink the other link", [](const std::string& r) { return ::unlink((r + "/d/g").c_str()); }},
      {"create a sibling", [](const std::string& r) { return write_file(r + "/d/s", "s") ? 0 : -1; }},
      {"mkdir in the dir", [](const std::string& r) { return ::mkdir((r + "/d/sub").c_str(), 0755); }},
      {"rename within the dir",
       [](const std::string& r) { return ::rename((r + "/d/f").c_str(), (r + "/d/f2").c_str()); }},
      {"rename back over nothing",
       [](const std::string& r) { return ::rename((r + "/d/f2").c_str(), (r + "/d/f").c_str()); }},
      {"utimensat",
       [](const std::string& r) {
         const timespec t[2] = {{5, 0}, {6, 0}};
         return ::utimensat(AT_FDCWD, (r + "/d/f").c_str(), t, 0);
       }},
  };
  for (const Case& c : cases) {
    Outcome o = same(c.what, [&](const std::string& r) { return changes(r, c.op); });
    EXPECT_GE(o.ret, 0) << c.what << " failed on peregrine";
  }
}

// Timestamps keep the order of the changes (xfstests generic/423's "touch
// ref; write f" check): a file written after another file was created, or
// chmod'ed, has an mtime and ctime no older than that file's. With
// fuse.cache=writeback the kernel stamps a write itself, from the coarse
// clock; the daemon stamped creations and chmods from the fine one, so a
// write in the same clock tick came out older. Repeated, since it takes a
// write in the same tick as the change before it (the usual case: a tick
// is several milliseconds).
TEST_P(AttributesTest, AWriteAfterAnotherChangeIsNotOlder) {
  constexpr int kRounds = 50;
  auto before = [](const timespec& a, const timespec& b) { return after(b, a); };
  Outcome o = same("writes stamped older than the change before them", [&](const std::string& r) {
    Fd f(::open((r + "/f").c_str(), O_RDWR | O_CREAT, 0644));
    if (!f.ok()) return outcome(-1);
    long older = 0;
    for (int i = 0; i < kRounds; ++i) {
      const std::string ref = r + "/ref" + std::to_string(i);
      struct stat rs, fs;
      // A new file (stamped by the filesystem), then a write to f.
      if (!write_file(ref, "") || !write_at(f.get(), std::string("x"), i) || ::stat(ref.c_str(), &rs) != 0 ||
          ::fstat(f.get(), &fs) != 0)
        return outcome(-1);
      older += before(fs.st_mtim, rs.st_mtim) + before(fs.st_ctim, rs.st_ctim);
      // A chmod of the reference (its ctime), then a write to f.
      if (::chmod(ref.c_str(), 0600) != 0 || !write_at(f.get(), std::string("y"), i) || ::stat(ref.c_str(), &rs) != 0 ||
          ::fstat(f.get(), &fs) != 0)
        return outcome(-1);
      older += before(fs.st_ctim, rs.st_ctim);
    }
    return outcome(older);
  });
  EXPECT_EQ(o.ret, 0) << "of " << 3 * kRounds << " timestamps, these were older than a change made before them";
}

PEREGRINE_FOR_CACHE_MODES(AttributesTest);

// st_blksize, the size cp and stdio read and write in, is a full stripe:
// with a smaller one each direct write reaches only some of the members.
class PreferredIoSizeTest : public MountedTest {};

blksize_t blksize_of(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_blksize : -1;
}

TEST_F(PreferredIoSizeTest, IsTheStripeWidthOfTheDefaultVolume) {
  ASSERT_TRUE(write_file(at("f"), "x"));
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  // 4 members x the default 128 KiB stripe unit.
  EXPECT_EQ(blksize_of(at("f")), 512 * 1024);
  EXPECT_EQ(blksize_of(at("d")), 512 * 1024);
  EXPECT_EQ(blksize_of(volume_->mountpoint()), 512 * 1024);
}

class PreferredIoSizeSmallUnitTest : public MountedTest {
 protected:
  std::vector<std::string> mkfs_options() override { return {"--stripe-unit", "64K"}; }
};

TEST_F(PreferredIoSizeSmallUnitTest, FollowsTheStripeUnit) {
  ASSERT_TRUE(write_file(at("f"), "x"));
  EXPECT_EQ(blksize_of(at("f")), 4 * 64 * 1024);
}

class PreferredIoSizeLargeUnitTest : public MountedTest {
 protected:
  std::vector<std::string> mkfs_options() override { return {"--stripe-unit", "1M"}; }
};

TEST_F(PreferredIoSizeLargeUnitTest, StaysWithinOneFuseRequest) {
  ASSERT_TRUE(write_file(at("f"), "x"));
  // A 4 MiB stripe, but a FUSE request carries at most fuse.max_request_bytes.
  EXPECT_EQ(blksize_of(at("f")), 1024 * 1024);
}

}  // namespace
}  // namespace peregrine::fstest
