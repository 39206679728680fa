// O_TMPFILE: a file with no name, written and then linked into place
// atomically (linkat of the descriptor), or gone without a trace at its
// last close and after a crash. The kernel's own rules (an O_TMPFILE|O_EXCL
// file cannot be linked) are compared with a native directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

uint64_t free_bytes(const std::string& path) {
  struct statvfs s;
  EXPECT_EQ(::statvfs(path.c_str(), &s), 0);
  return static_cast<uint64_t>(s.f_bfree) * s.f_frsize;
}

uint64_t used_inodes(const std::string& path) {
  struct statvfs s;
  EXPECT_EQ(::statvfs(path.c_str(), &s), 0);
  return s.f_files - s.f_ffree;
}

// Names in a directory other than "." and "..".
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  RunResult r = run({"ls", "-A", dir});
  EXPECT_EQ(r.code, 0) << r.describe();
  size_t start = 0;
  for (size_t nl = r.out.find('\n'); nl != std::string::npos; nl = r.out.find('\n', start)) {
    names.push_back(r.out.substr(start, nl - start));
    start = nl + 1;
  }
  return names;
}

// `peregrine fsck -n` on the unmounted volume: exit 0 expected; returns
// its output.
std::string fsck_clean(const Volume& v) {
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << "fsck -n: " << r.describe();
  v.wait_members_released();  // fsck's lock outlives it as the daemon's does
  return r.out + r.err;
}

std::string proc_fd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

class TmpfileTest : public CacheModes<MountedTest> {};

// 1 MiB and a partial block: both the aligned and the read-modify-write
// write paths.
constexpr size_t kData = (1 << 20) + 1234;

TEST_P(TmpfileTest, WrittenThenLinkedIntoPlaceAndKeptAcrossRemount) {
  const std::string data = pattern(kData, 31);
  Fd fd(::open(volume_->mountpoint().c_str(), O_TMPFILE | O_RDWR, 0640));
  ASSERT_TRUE(fd.ok()) << "O_TMPFILE: " << std::strerror(errno);
  ASSERT_TRUE(write_at(fd.get(), data, 0));
  struct stat st;
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, static_cast<off_t>(kData));
  EXPECT_TRUE(names_in(volume_->mountpoint()).empty()) << "a temporary file has no name";
  EXPECT_TRUE(read_at(fd.get(), kData, 0) == data);

  // Put into place through /proc (any user may) ...
  ASSERT_EQ(::linkat(AT_FDCWD, proc_fd(fd.get()).c_str(), AT_FDCWD, at("placed").c_str(), AT_SYMLINK_FOLLOW), 0)
      << std::strerror(errno);
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_TRUE(read_file(at("placed")) == data);
  // ... and a second one with AT_EMPTY_PATH (CAP_DAC_READ_SEARCH: root).
  const std::string data2 = pattern(5000, 32);
  Fd fd2(::open(volume_->mountpoint().c_str(), O_TMPFILE | O_WRONLY, 0600));
  ASSERT_TRUE(fd2.ok());
  ASSERT_TRUE(write_at(fd2.get(), data2, 0));
  ASSERT_EQ(::linkat(fd2.get(), "", AT_FDCWD, at("second").c_str(), AT_EMPTY_PATH), 0) << std::strerror(errno);
  EXPECT_TRUE(read_file(at("second")) == data2);
  // Linking does not replace: the name must be free, as for link(2).
  EXPECT_EQ(::linkat(fd2.get(), "", AT_FDCWD, at("placed").c_str(), AT_EMPTY_PATH), -1);
  EXPECT_EQ(errno, EEXIST);
  fd.reset();
  fd2.reset();

  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  fsck_clean(*volume_);
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(at("placed")) == data) << "the linked temporary file's data did not survive";
  EXPECT_TRUE(read_file(at("second")) == data2);
  ASSERT_EQ(::stat(at("placed").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

constexpr size_t kBig = 16 << 20;

TEST_P(TmpfileTest, NeverLinkedVanishesAtCloseWithoutATrace) {
  const uint64_t empty = free_bytes(volume_->mountpoint());
  const uint64_t inodes = used_inodes(volume_->mountpoint());
  {
    Fd fd(::open(volume_->mountpoint().c_str(), O_TMPFILE | O_RDWR, 0600));
    ASSERT_TRUE(fd.ok()) << std::strerror(errno);
    ASSERT_TRUE(write_at(fd.get(), pattern(kBig, 33), 0));
    ASSERT_EQ(::fsync(fd.get()), 0);
    EXPECT_LE(free_bytes(volume_->mountpoint()) + kBig, empty) << "16 MiB of data must use at least 16 MiB";
    EXPECT_EQ(used_inodes(volume_->mountpoint()), inodes + 1);
  }
  // RELEASE follows close(2) asynchronously; the unmount waits for the
  // daemon, which has freed the file by then.
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string report = fsck_clean(*volume_);
  EXPECT_EQ(report.find("orphan"), std::string::npos) << "freed at close, not left for the next mount:\n" << report;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(free_bytes(volume_->mountpoint()), empty) << "the temporary file's space did not come back";
  EXPECT_EQ(used_inodes(volume_->mountpoint()), inodes);
  EXPECT_TRUE(names_in(volume_->mountpoint()).empty());
}

TEST_P(TmpfileTest, AnOpenTemporaryFileLeavesNoTraceAfterKill9) {
  const uint64_t empty = free_bytes(volume_->mountpoint());
  const uint64_t inodes = used_inodes(volume_->mountpoint());
  ASSERT_TRUE(write_file(at("kept"), "a named file beside it"));
  Fd fd(::open(volume_->mountpoint().c_str(), O_TMPFILE | O_RDWR, 0600));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  ASSERT_TRUE(write_at(fd.get(), pattern(kBig, 34), 0));
  ASSERT_EQ(::fsync(fd.get()), 0);  // the data and the inode are on disk
  volume_->kill9();
  fd.reset();  // the connection is gone; close fails quietly

  // Before any recovery: an orphan is what a crash leaves, not a problem.
  std::string report = fsck_clean(*volume_);
  EXPECT_NE(report.find("orphan"), std::string::npos) << "fsck should name the orphan it found:\n" << report;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(names_in(volume_->mountpoint()), std::vector<std::string>{"kept"});
  EXPECT_EQ(read_file(at("kept")), "a named file beside it");
  EXPECT_GE(free_bytes(volume_->mountpoint()) + (1 << 20), empty)
      << "the temporary file's space must come back at the next mount (1 MiB slack for the named file)";
  EXPECT_EQ(used_inodes(volume_->mountpoint()), inodes + 1);
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  report = fsck_clean(*volume_);
  EXPECT_EQ(report.find("orphan"), std::string::npos) << "the mount freed the orphan:\n" << report;
}

PEREGRINE_FOR_CACHE_MODES(TmpfileTest);

// The kernel's rules, side by side with a native directory.
class TmpfileRulesTest : public SideBySideTest {};

TEST_F(TmpfileRulesTest, AnExclusiveTemporaryFileCannotBeLinked) {
  same("O_TMPFILE|O_EXCL, write, link: ENOENT", [](const std::string& root) {
    Fd fd(::open(root.c_str(), O_TMPFILE | O_EXCL | O_RDWR, 0600));
    if (!fd.ok() || !write_at(fd.get(), std::string("secret"), 0)) return outcome(-1);
    long through_proc =
        ::linkat(AT_FDCWD, proc_fd(fd.get()).c_str(), AT_FDCWD, (root + "/a").c_str(), AT_SYMLINK_FOLLOW);
    if (through_proc == 0) return outcome(0);
    return outcome(::linkat(fd.get(), "", AT_FDCWD, (root + "/b").c_str(), AT_EMPTY_PATH));
  });
  same("O_TMPFILE on a file, not a directory: ENOTDIR", [](const std::string& root) {
    if (!write_file(root + "/file", "x")) return outcome(-1);
    return outcome(::open((root + "/file").c_str(), O_TMPFILE | O_RDWR, 0600));
  });
  same("O_TMPFILE without write access mode: EINVAL",
       [](const std::string& root) { return outcome(::open(root.c_str(), O_TMPFILE | O_RDONLY, 0600)); });
  same("O_TMPFILE in a subdirectory, linked there", [](const std::string& root) {
    if (::mkdir((root + "/d").c_str(), 0755) != 0) return outcome(-1);
    Fd fd(::open((root + "/d").c_str(), O_TMPFILE | O_WRONLY, 0644));
    if (!fd.ok() || !write_at(fd.get(), std::string("in d"), 0)) return outcome(-1);
    return outcome(
        ::linkat(AT_FDCWD, proc_fd(fd.get()).c_str(), AT_FDCWD, (root + "/d/named").c_str(), AT_SYMLINK_FOLLOW));
  });
  expect_same_trees();
}

}  // namespace
}  // namespace peregrine::fstest
