// rename(2) and renameat2(2), side by side with a native directory: replace
// a file, a directory over an empty one, ENOTEMPTY, EISDIR/ENOTDIR,
// RENAME_NOREPLACE, RENAME_EXCHANGE, a directory into itself, and an open
// file or directory replaced.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
