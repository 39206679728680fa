// rename(2) and renameat2(2), side by side with a native directory: replace
// a file, a directory over an empty one, ENOTEMPTY, EISDIR/ENOTDIR,
// RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT (and overlayfs with
// its upper layer on the volume, which needs it), a directory into itself,
// and an open file or directory replaced.
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class RenameTest : public SideBySideTest {
 protected:
  // The same starting tree on both sides.
  void populate() {
    same("populate", [](const std::string& r) {
      bool ok = write_file(r + "/a", "contents of a") && write_file(r + "/b", "contents of b, longer") &&
                ::mkdir((r + "/empty").c_str(), 0755) == 0 && ::mkdir((r + "/full").c_str(), 0755) == 0 &&
                write_file(r + "/full/inner", "inner") && ::mkdir((r + "/d").c_str(), 0700) == 0 &&
                write_file(r + "/d/x", "x in d");
      return outcome(ok ? 0 : -1);
    });
  }
  static Outcome ren(const std::string& r, const char* from, const char* to, unsigned flags = 0) {
    return outcome(::renameat2(AT_FDCWD, (r + "/" + from).c_str(), AT_FDCWD, (r + "/" + to).c_str(), flags));
  }
};

TEST_F(RenameTest, FileReplacesFile) {
  populate();
  struct stat before;
  ASSERT_EQ(::stat(at("a").c_str(), &before), 0);
  same("a -> b", [](const std::string& r) { return ren(r, "a", "b"); });
  EXPECT_EQ(read_file(at("b")), "contents of a");
  struct stat after;
  ASSERT_EQ(::stat(at("b").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "rename keeps the inode";
  same("a is gone", [](const std::string& r) { return outcome(::access((r + "/a").c_str(), F_OK)); });
  same("rename onto itself", [](const std::string& r) { return ren(r, "b", "b"); });
  same("rename missing: ENOENT", [](const std::string& r) { return ren(r, "nope", "b"); });
  expect_same_trees();
}

TEST_F(RenameTest, DirectoryCases) {
  populate();
  same("dir over empty dir", [](const std::string& r) { return ren(r, "d", "empty"); });
  EXPECT_EQ(read_file(at("empty/x")), "x in d");
  same("dir over non-empty dir: ENOTEMPTY", [](const std::string& r) { return ren(r, "empty", "full"); });
  same("file over dir: EISDIR", [](const std::string& r) { return ren(r, "a", "full"); });
  same("dir over file: ENOTDIR", [](const std::string& r) { return ren(r, "full", "a"); });
  same("dir into its own subdir: EINVAL", [](const std::string& r) { return ren(r, "full", "full/inner2"); });
  same("move a file between dirs", [](const std::string& r) { return ren(r, "b", "full/b"); });
  same("rename a dir to a new name", [](const std::string& r) { return ren(r, "full", "full2"); });
  EXPECT_EQ(read_file(at("full2/b")), "contents of b, longer");
  EXPECT_EQ(read_file(at("full2/inner")), "inner");
  expect_same_trees();
}

TEST_F(RenameTest, NoReplace) {
  populate();
  same("RENAME_NOREPLACE onto existing: EEXIST",
       [](const std::string& r) { return ren(r, "a", "b", RENAME_NOREPLACE); });
  EXPECT_EQ(read_file(at("a")), "contents of a");
  EXPECT_EQ(read_file(at("b")), "contents of b, longer");
  same("RENAME_NOREPLACE to a new name", [](const std::string& r) { return ren(r, "a", "c", RENAME_NOREPLACE); });
  EXPECT_EQ(read_file(at("c")), "contents of a");
  expect_same_trees();
}

TEST_F(RenameTest, Exchange) {
  populate();
  same("exchange two files", [](const std::string& r) { return ren(r, "a", "b", RENAME_EXCHANGE); });
  EXPECT_EQ(read_file(at("a")), "contents of b, longer");
  EXPECT_EQ(read_file(at("b")), "contents of a");
  same("exchange a file and a dir", [](const std::string& r) { return ren(r, "a", "full", RENAME_EXCHANGE); });
  EXPECT_EQ(read_file(at("full")), "contents of b, longer");
  EXPECT_EQ(read_file(at("a/inner")), "inner");
  same("exchange with a missing name: ENOENT",
       [](const std::string& r) { return ren(r, "b", "nope", RENAME_EXCHANGE); });
  same("EXCHANGE with NOREPLACE: EINVAL",
       [](const std::string& r) { return ren(r, "a", "b", RENAME_EXCHANGE | RENAME_NOREPLACE); });
  expect_same_trees();
}

// The old name becomes a whiteout, as on ext4: a 0:0 character device
// with mode 0 (root's here; the caller's in general).
TEST_F(RenameTest, WhiteoutLeavesACharacterDeviceAtTheOldName) {
  populate();
  same("RENAME_WHITEOUT to a new name", [](const std::string& r) { return ren(r, "a", "c", RENAME_WHITEOUT); });
  same("RENAME_WHITEOUT over a file", [](const std::string& r) { return ren(r, "b", "c", RENAME_WHITEOUT); });
  same("RENAME_WHITEOUT | NOREPLACE onto existing: EEXIST",
       [](const std::string& r) { return ren(r, "d/x", "c", RENAME_WHITEOUT | RENAME_NOREPLACE); });
  same("RENAME_WHITEOUT | EXCHANGE: EINVAL",
       [](const std::string& r) { return ren(r, "d/x", "c", RENAME_WHITEOUT | RENAME_EXCHANGE); });
  same("RENAME_WHITEOUT of a directory", [](const std::string& r) { return ren(r, "full", "moved", RENAME_WHITEOUT); });
  EXPECT_EQ(read_file(at("c")), "contents of b, longer");
  for (const char* name : {"a", "b", "full"}) {
    struct stat st;
    ASSERT_EQ(::lstat(at(name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << name;
    EXPECT_EQ(st.st_mode & 07777, 0u) << name;
    EXPECT_EQ(st.st_rdev, makedev(0, 0)) << name;
  }
  expect_same_trees();
}

// overlayfs refuses an upper layer without RENAME_WHITEOUT ("upper fs does
// not support RENAME_WHITEOUT"; xfstests generic/631). On the volume:
// deleting and renaming files of the lower layer through the merged view
// leaves whiteouts in the upper layer, and the merged view shows what was
// done; unmounted and mounted again, it still does.
TEST_F(RenameTest, OverlayfsWithItsUpperLayerOnTheVolume) {
  {
    std::ifstream fs("/proc/filesystems");
    std::string all((std::istreambuf_iterator<char>(fs)), std::istreambuf_iterator<char>());
    if (all.find("\toverlay\n") == std::string::npos) GTEST_SKIP() << "this kernel has no overlayfs loaded";
  }
  for (const char* d : {"lower", "upper", "work", "merged"}) ASSERT_EQ(::mkdir(at(d).c_str(), 0755), 0) << d;
  ASSERT_TRUE(write_file(at("lower/gone"), "deleted through the overlay"));
  ASSERT_TRUE(write_file(at("lower/old"), "renamed through the overlay"));
  const std::string options = "lowerdir=" + at("lower") + ",upperdir=" + at("upper") + ",workdir=" + at("work");
  auto mount_overlay = [&] { return ::mount("overlay", at("merged").c_str(), "overlay", 0, options.c_str()); };
  ASSERT_EQ(mount_overlay(), 0) << std::strerror(errno);
  bool ok = ::unlink(at("merged/gone").c_str()) == 0 &&
            ::rename(at("merged/old").c_str(), at("merged/new").c_str()) == 0 &&
            write_file(at("merged/made"), "made in the overlay");
  const int unlink_errno = errno;
  ASSERT_EQ(::umount(at("merged").c_str()), 0) << std::strerror(errno);
  ASSERT_TRUE(ok) << std::strerror(unlink_errno);
  for (const char* name : {"upper/gone", "upper/old"}) {
    struct stat st;
    ASSERT_EQ(::lstat(at(name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) << name << " is not a whiteout";
  }
  ASSERT_EQ(mount_overlay(), 0) << std::strerror(errno);
  struct stat st;
  EXPECT_NE(::lstat(at("merged/gone").c_str(), &st), 0);
  EXPECT_NE(::lstat(at("merged/old").c_str(), &st), 0);
  EXPECT_EQ(read_file(at("merged/new")), "renamed through the overlay");
  EXPECT_EQ(read_file(at("merged/made")), "made in the overlay");
  EXPECT_EQ(::umount(at("merged").c_str()), 0) << std::strerror(errno);
}

// A descriptor keeps its inode alive when a rename replaces the name it
// was opened by (xfstests generic/035): fstat gives the replaced inode with
// no links, as for an unlinked open file, and its contents stay readable.
// A directory as well as a file, and a directory removed while open.
TEST_F(RenameTest, AnOpenTargetReplacedByRenameStaysAliveWithNoLinks) {
  // What fstat says of the descriptor after `change`: link count, type
  // and size (directories: 0), as one number to compare.
  auto fstat_after = [](const std::string& opened, int flags, const std::function<int()>& change) {
    Fd fd(::open(opened.c_str(), flags));
    if (!fd.ok()) return outcome(-1);
    if (change() != 0) return Outcome{-2, errno};
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Outcome{-3, errno};
    return outcome(static_cast<long>(st.st_nlink) * 1000000 + (S_ISDIR(st.st_mode) ? 0 : st.st_size));
  };
  Outcome o = same("directory replaced by rename", [&](const std::string& r) {
    if (::mkdir((r + "/d1").c_str(), 0755) != 0 || ::mkdir((r + "/d2").c_str(), 0755) != 0) return outcome(-1);
    return fstat_after(r + "/d2", O_RDONLY | O_DIRECTORY,
                       [&] { return ::rename((r + "/d1").c_str(), (r + "/d2").c_str()); });
  });
  EXPECT_EQ(o, outcome(0)) << "an open directory replaced by rename must have no links";
  o = same("file replaced by rename", [&](const std::string& r) {
    if (!write_file(r + "/f1", "new") || !write_file(r + "/f2", "replaced")) return outcome(-1);
    return fstat_after(r + "/f2", O_RDONLY, [&] { return ::rename((r + "/f1").c_str(), (r + "/f2").c_str()); });
  });
  EXPECT_EQ(o, outcome(8)) << "no links, the replaced file's size";
  o = same("directory removed while open", [&](const std::string& r) {
    if (::mkdir((r + "/gone").c_str(), 0755) != 0) return outcome(-1);
    return fstat_after(r + "/gone", O_RDONLY | O_DIRECTORY, [&] { return ::rmdir((r + "/gone").c_str()); });
  });
  EXPECT_EQ(o, outcome(0));
  // The replaced file's data through its descriptor, and a listing of the
  // replaced directory (empty: the kernel knows it is dead).
  same("reading a replaced file", [&](const std::string& r) {
    if (!write_file(r + "/g1", "new") || !write_file(r + "/g2", "old data")) return outcome(-1);
    Fd fd(::open((r + "/g2").c_str(), O_RDONLY));
    if (!fd.ok() || ::rename((r + "/g1").c_str(), (r + "/g2").c_str()) != 0) return outcome(-1);
    return outcome(read_at(fd.get(), 64, 0) == "old data" ? 0 : -4);
  });
  same("listing a replaced directory", [&](const std::string& r) {
    if (::mkdir((r + "/e1").c_str(), 0755) != 0 || ::mkdir((r + "/e2").c_str(), 0755) != 0) return outcome(-1);
    Fd fd(::open((r + "/e2").c_str(), O_RDONLY | O_DIRECTORY));
    if (!fd.ok() || ::rename((r + "/e1").c_str(), (r + "/e2").c_str()) != 0) return outcome(-1);
    char buf[4096];
    return outcome(::syscall(SYS_getdents64, fd.get(), buf, sizeof buf));
  });
  expect_same_trees();
}

}  // namespace
}  // namespace peregrine::fstest
