// Durability: what was fsync'd survives kill -9 of the daemon; nothing that
// was not written is visible as stale bytes of a deleted file; a clean
// unmount and remount preserves every byte and every attribute; fsck (when
// the build has it) finds the volume clean afterwards.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class DurabilityTest : public CacheModes<MountedTest> {};

// A byte sequence that cannot appear in pattern() output by chance at this
// length, to find stale bytes of a deleted file.
const std::string kStale = "STALE-DATA-OF-A-DELETED-FILE-" + std::string(35, '#');

bool fsync_path(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  return fd.ok() && ::fsync(fd.get()) == 0;
}

// Where two byte strings first differ (the shorter one's size if one is
// the other's start), for a failure to say what was lost.
size_t first_difference(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  return static_cast<size_t>(std::mismatch(shorter.begin(), shorter.end(), longer.begin()).first - shorter.begin());
}

bool fsck_available() { return run({peregrine_bin(), "fsck", "--help"}).code == 0; }

void expect_fsck_clean(const Volume& v) {
  if (!fsck_available()) return;  // this build has no fsck yet: nothing to assert
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << "fsck -n: " << r.describe();
  // fsck shares the daemon's runtime, and its lock outlives it the same way.
  v.wait_members_released();
}

TEST_P(DurabilityTest, FsyncedDataSurvivesKill9AndNothingStaleAppears) {
  // Free blocks full of recognisable old bytes, for new files to land on.
  std::string stale;
  while (stale.size() < (32u << 20)) stale += kStale;
  ASSERT_TRUE(write_file(at("old"), stale));
  ASSERT_TRUE(fsync_path(at("old")));
  ASSERT_EQ(::unlink(at("old").c_str()), 0);
  ASSERT_TRUE(fsync_path(volume_->mountpoint()));

  const std::string a = pattern(4 << 20, 11), b = pattern(100000, 12), c = pattern(8 << 20, 13);
  ASSERT_TRUE(write_file(at("a"), a));
  ASSERT_TRUE(fsync_path(at("a")));
  ASSERT_EQ(::mkdir(at("dir").c_str(), 0750), 0);
  ASSERT_TRUE(write_file(at("dir/b"), b, 0600));
  ASSERT_TRUE(fsync_path(at("dir/b")));
  ASSERT_TRUE(fsync_path(at("dir")));
  ASSERT_TRUE(fsync_path(volume_->mountpoint()));
  // Not synced: may be lost, must not show other files' bytes.
  ASSERT_TRUE(write_file(at("c"), c));
  {
    Fd fd(::open(at("a").c_str(), O_WRONLY));
    ASSERT_TRUE(write_at(fd.get(), pattern(1 << 20, 14), 4 << 20));  // unsynced extension of a
  }

  volume_->kill9();
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << "mount after kill -9: " << r.describe();

  std::string got_a = read_file(at("a"));
  ASSERT_GE(got_a.size(), a.size());
  EXPECT_TRUE(got_a.compare(0, a.size(), a) == 0) << "fsync'd data of 'a' changed";
  EXPECT_TRUE(read_file(at("dir/b")) == b) << "fsync'd 'dir/b' lost or changed";
  struct stat st;
  ASSERT_EQ(::stat(at("dir/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(got_a.find(kStale.substr(0, 32)), std::string::npos) << "stale bytes in 'a'";
  std::string got_c = read_file(at("c"));  // absent, partial or whole: all fine
  EXPECT_LE(got_c.size(), c.size());
  EXPECT_EQ(got_c.find(kStale.substr(0, 32)), std::string::npos) << "stale bytes of a deleted file in 'c'";
  for (size_t i = 0; i < got_c.size(); ++i) {
    if (got_c[i] != c[i] && got_c[i] != '\0') {
      ADD_FAILURE() << "'c' byte " << i << " is neither the data written nor zero";
      break;
    }
  }
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  expect_fsck_clean(*volume_);
}

// `peregrine sync` makes durable what neither an fsync of the root nor
// sync(1) would: changes of files the root's last change does not cover
// (the root's own changes were durable already, so an fsync of it alone
// committed nothing), bytes still in the page cache (also of a file still
// open for writing, whose access time it leaves), a small append the
// daemon keeps as a tail block, and times.
TEST_P(DurabilityTest, PeregrineSyncMakesEveryChangeDurable) {
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("grown"), pattern(100000, 31)));
  ASSERT_TRUE(fsync_path(at("grown")));
  ASSERT_TRUE(fsync_path(volume_->mountpoint()));

  const std::string grown = pattern(100000, 31) + pattern(300000, 32);
  const std::string fresh = pattern(70000, 33);
  Fd open_writer(::open(at("grown").c_str(), O_WRONLY | O_APPEND));
  ASSERT_TRUE(open_writer.ok());
  ASSERT_TRUE(write_at(open_writer.get(), pattern(300000, 32), 100000));  // still open: nothing closed it
  ASSERT_EQ(::mkdir(at("d/e").c_str(), 0755), 0);
  Fd nested_writer(::open(at("d/e/open").c_str(), O_WRONLY | O_CREAT, 0644));  // reached a name at a time
  ASSERT_TRUE(nested_writer.ok());
  ASSERT_TRUE(write_at(nested_writer.get(), pattern(50000, 34), 0));
  ASSERT_TRUE(write_file(at("d/fresh"), fresh));
  ASSERT_TRUE(write_file(at("d/log"), "line 1\n"));
  {
    Fd log(::open(at("d/log").c_str(), O_WRONLY | O_APPEND));
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(::write(log.get(), "line 2\n", 7), 7);
  }
  const timespec t[2] = {{1500000000, 0}, {1600000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, at("d/fresh").c_str(), t, 0), 0);

  struct stat before;
  ASSERT_EQ(::stat(at("grown").c_str(), &before), 0);

  RunResult r = run({peregrine_bin(), "sync", at("d")});  // any path on the volume names it
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.out, "");
  struct stat after;
  ASSERT_EQ(::stat(at("grown").c_str(), &after), 0);
  EXPECT_EQ(after.st_atim.tv_sec, before.st_atim.tv_sec) << "syncing a file open for writing is no read of it";
  EXPECT_EQ(after.st_atim.tv_nsec, before.st_atim.tv_nsec);
  open_writer.reset();
  nested_writer.reset();

  volume_->kill9();
  r = volume_->mount();
  ASSERT_EQ(r.code, 0) << "mount after kill -9: " << r.describe();
  const std::string got_grown = read_file(at("grown"));
  EXPECT_TRUE(got_grown == grown) << "the append to 'grown' was lost or changed: " << got_grown.size()
                                  << " bytes of " << grown.size() << ", first difference at byte "
                                  << first_difference(got_grown, grown);
  EXPECT_TRUE(read_file(at("d/fresh")) == fresh) << "'d/fresh' was lost or changed";
  EXPECT_TRUE(read_file(at("d/e/open")) == pattern(50000, 34)) << "'d/e/open' was lost or changed";
  EXPECT_EQ(read_file(at("d/log")), "line 1\nline 2\n");
  struct stat st;
  ASSERT_EQ(::stat(at("d/fresh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1600000000);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  expect_fsck_clean(*volume_);
}

// The list `peregrine sync` fsyncs by (open_files_xattr.h): each file
// with a handle open for writing once, by its current path, in inode
// order; not files open only for reading, closed or unlinked ones;
// read-only; paged (a second writer keeps a file listed: the unit test
// write_open_files_test.cpp, as RELEASE comes asynchronously).
TEST_P(DurabilityTest, TheRootListsTheFilesOpenForWriting) {
  const std::string name = "user.peregrine.open_for_writing";
  auto page = [&](const std::string& xattr) {
    std::string buf(65536, '\0');
    ssize_t n = ::getxattr(volume_->mountpoint().c_str(), xattr.c_str(), buf.data(), buf.size());
    EXPECT_GE(n, 0) << xattr << ": " << std::strerror(errno);
    buf.resize(n < 0 ? 0 : n);
    return buf;
  };
  // RELEASE follows close(2) asynchronously: a page may list a file just
  // closed until the daemon has its release, so a page is awaited.
  auto page_becomes = [&](const std::string& xattr, const std::string& want) {
    std::string got = page(xattr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (got != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      got = page(xattr);
    }
    return got;
  };
  auto ino_of = [&](const std::string& rel) {
    struct stat st;
    EXPECT_EQ(::stat(at(rel).c_str(), &st), 0) << rel;
    return static_cast<uint64_t>(st.st_ino);
  };
  auto record = [&](const std::string& rel) { return std::to_string(ino_of(rel)) + '\t' + rel + '\0'; };
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(at("d/e").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("closed"), "x"));
  ASSERT_TRUE(write_file(at("reader"), "x"));
  ASSERT_TRUE(write_file(at("theirs"), "x"));
  ASSERT_EQ(::chown(at("theirs").c_str(), kNobody, kNobody), 0);  // root sees every user's
  Fd a(::open(at("a").c_str(), O_WRONLY | O_CREAT, 0644));
  Fd a_again(::open(at("a").c_str(), O_WRONLY));
  Fd b(::open(at("d/e/b").c_str(), O_RDWR | O_CREAT, 0644));
  Fd reader(::open(at("reader").c_str(), O_RDONLY));
  Fd theirs(::open(at("theirs").c_str(), O_WRONLY));
  Fd gone(::open(at("gone").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_TRUE(a.ok() && a_again.ok() && b.ok() && reader.ok() && theirs.ok() && gone.ok());
  ASSERT_EQ(::unlink(at("gone").c_str()), 0);
  ASSERT_EQ(::rename(at("d").c_str(), at("moved").c_str()), 0);

  std::map<uint64_t, std::string> expected;
  for (const char* rel : {"a", "moved/e/b", "theirs"}) expected[ino_of(rel)] = record(rel);
  std::string all;
  for (const auto& [ino, rec] : expected) all += rec;
  EXPECT_EQ(page_becomes(name, all), all) << "'closed' and 'reader' are not open for writing, 'gone' has no name";
  const auto& [first_ino, first_record] = *expected.begin();
  EXPECT_EQ(page(name + ".after." + std::to_string(first_ino)), all.substr(first_record.size()));
  EXPECT_EQ(page(name + ".after." + std::to_string(expected.rbegin()->first)), "");
  for (const std::string& reserved : {name, name + ".after.1"}) {
    EXPECT_EQ(::setxattr(volume_->mountpoint().c_str(), reserved.c_str(), "x", 1, 0), -1) << reserved;
    EXPECT_EQ(errno, EPERM) << reserved;
    EXPECT_EQ(::removexattr(volume_->mountpoint().c_str(), reserved.c_str()), -1) << reserved;
    EXPECT_EQ(errno, EPERM) << reserved;
  }

  a.reset();
  a_again.reset();
  b.reset();
  theirs.reset();
  gone.reset();
  EXPECT_EQ(page_becomes(name, ""), "") << "closed files are still listed";

  // More files than a page holds: the pages follow each other, in order.
  std::vector<Fd> many;
  std::set<std::string> want;
  for (int i = 0; i < 400; ++i) {
    const std::string rel = "many-" + std::to_string(i) + std::string(200, 'n');
    many.emplace_back(::open(at(rel).c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_TRUE(many.back().ok()) << i;
    want.insert(rel);
  }
  std::set<std::string> got;
  int pages = 0;
  for (std::string after = name;; ++pages) {
    const std::string p = page(after);
    if (p.empty()) break;
    ASSERT_LE(p.size(), 65536u);
    ASSERT_LT(pages, 10);
    for (size_t pos = 0; pos < p.size();) {
      const size_t tab = p.find('\t', pos), nul = p.find('\0', pos);
      ASSERT_TRUE(tab != std::string::npos && nul != std::string::npos && tab < nul);
      got.insert(p.substr(tab + 1, nul - tab - 1));
      after = name + ".after." + p.substr(pos, tab - pos);
      pos = nul + 1;
    }
  }
  EXPECT_EQ(pages, 2);
  EXPECT_TRUE(got == want) << got.size() << " paths listed of " << want.size();
}

// A user other than root sees only its own files in that list: the
// others' names may lie in directories it cannot search.
class OpenForWritingListTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.allow_other=true"}; }
};

TEST_F(OpenForWritingListTest, AnotherUserSeesOnlyItsOwnFiles) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(at("private").c_str(), 0700), 0);
  ASSERT_TRUE(write_file(at("private/roots"), "x"));
  ASSERT_TRUE(write_file(at("theirs"), "x"));
  ASSERT_EQ(::chown(at("theirs").c_str(), kNobody, kNobody), 0);
  Fd roots(::open(at("private/roots").c_str(), O_WRONLY));
  Fd theirs(::open(at("theirs").c_str(), O_WRONLY));
  ASSERT_TRUE(roots.ok() && theirs.ok());
  struct stat st;
  ASSERT_EQ(::stat(at("theirs").c_str(), &st), 0);
  const std::string expected = std::to_string(st.st_ino) + "\ttheirs" + '\0';
  const std::string root = volume_->mountpoint();
  Outcome seen = as_nobody([&] {
    std::string buf(65536, '\0');
    ssize_t n = ::getxattr(root.c_str(), "user.peregrine.open_for_writing", buf.data(), buf.size());
    return outcome(n < 0 ? n : std::string(buf.data(), n) == expected ? 1 : 0);
  });
  EXPECT_EQ(seen, (Outcome{1, 0})) << "nobody must see 'theirs' and nothing else";
}

TEST_P(DurabilityTest, PeregrineSyncNamesAPathThatIsNoVolume) {
  RunResult r = run({peregrine_bin(), "sync", "/proc", volume_->mountpoint()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("/proc: not a peregrine mount"), std::string::npos) << r.err;
  r = run({peregrine_bin(), "sync", "-v", volume_->mountpoint(), at(".")});
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.out, volume_->mountpoint() + ": durable\n");  // once per volume
  r = run({peregrine_bin(), "sync"});
  EXPECT_EQ(r.code, 2) << r.describe();
}

// A user's mtime set through an open writer (futimens with atime left
// alone: the same SETATTR of mtime and ctime that the kernel sends for
// the times it stamped, but without the writer's handle) is journaled, so
// an fdatasync makes it durable; the kernel's own flush of stamped times
// is the one left for the next commit.
TEST_P(DurabilityTest, AUsersMtimeSurvivesKill9AfterFdatasync) {
  const timespec set{1500000000, 123456789};
  {
    Fd fd(::open(at("f").c_str(), O_RDWR | O_CREAT, 0644));
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(write_at(fd.get(), pattern(3 << 20, 31), 0));
    ASSERT_EQ(::fsync(fd.get()), 0);
    const timespec t[2] = {{0, UTIME_OMIT}, set};
    ASSERT_EQ(::futimens(fd.get(), t), 0);
    ASSERT_EQ(::fdatasync(fd.get()), 0);
    volume_->kill9();
  }
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << "mount after kill -9: " << r.describe();
  struct stat st {};
  ASSERT_EQ(::stat(at("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, set.tv_sec);
  EXPECT_EQ(st.st_mtim.tv_nsec, set.tv_nsec);
  EXPECT_TRUE(read_file(at("f")) == pattern(3 << 20, 31)) << "fsync'd data";
}

TEST_P(DurabilityTest, CleanUnmountAndRemountPreserveEverything) {
  ASSERT_EQ(::mkdir(at("d").c_str(), 0711), 0);
  ASSERT_EQ(::mkdir(at("d/e").c_str(), 0700), 0);
  ASSERT_TRUE(write_file(at("small"), "tiny"));
  ASSERT_TRUE(write_file(at("d/big"), pattern(5 << 20, 21)));
  ASSERT_TRUE(write_file(at("d/e/unaligned"), pattern(123457, 22)));
  {
    Fd fd(::open(at("sparse").c_str(), O_WRONLY | O_CREAT, 0644));
    ASSERT_TRUE(write_at(fd.get(), pattern(5000, 23), 3 << 20));
  }
  ASSERT_TRUE(write_file(at("empty"), ""));
  ASSERT_EQ(::link(at("d/big").c_str(), at("hardlink").c_str()), 0);
  ASSERT_EQ(::symlink("d/e/unaligned", at("symlink").c_str()), 0);
  ASSERT_EQ(::setxattr(at("small").c_str(), "user.note", "kept", 4, 0), 0);
  ASSERT_EQ(::setxattr(at("d").c_str(), "user.dir", pattern(500, 24).data(), 500, 0), 0);
  ASSERT_EQ(::chown(at("d/e/unaligned").c_str(), 1000, 2000), 0);
  ASSERT_EQ(::chmod(at("small").c_str(), 02640), 0);
  const timespec t[2] = {{1500000000, 1}, {1600000000, 999999999}};
  ASSERT_EQ(::utimensat(AT_FDCWD, at("empty").c_str(), t, 0), 0);
  ASSERT_EQ(::rename(at("small").c_str(), at("d/small").c_str()), 0);

  const Tree before = snapshot_tree(volume_->mountpoint(), true);
  struct statvfs s0;
  ASSERT_EQ(::statvfs(volume_->mountpoint().c_str(), &s0), 0);
  ASSERT_EQ(before.size(), 9u);

  for (int round = 0; round < 2; ++round) {
    int status = volume_->unmount();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    expect_fsck_clean(*volume_);
    RunResult r = volume_->mount();
    ASSERT_EQ(r.code, 0) << r.describe();
    const Tree after = snapshot_tree(volume_->mountpoint(), true);
    EXPECT_TRUE(before == after) << "round " << round << ", before (first) vs after (second):\n"
                                 << describe_tree_difference(before, after);
    struct statvfs s1;
    ASSERT_EQ(::statvfs(volume_->mountpoint().c_str(), &s1), 0);
    EXPECT_EQ(s1.f_bfree, s0.f_bfree);
    EXPECT_EQ(s1.f_files - s1.f_ffree, s0.f_files - s0.f_ffree);
  }
}

PEREGRINE_FOR_CACHE_MODES(DurabilityTest);

}  // namespace
}  // namespace peregrine::fstest
