// Hard links, link counts and symbolic links, side by side with a native
// directory.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using LinksTest = SideBySideTest;

Outcome nlink_of(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) < 0 ? outcome(-1) : outcome(static_cast<long>(st.st_nlink));
}

TEST_F(LinksTest, HardLinksShareTheInodeAndCountLinks) {
  same("create", [](const std::string& r) { return outcome(write_file(r + "/f", "shared bytes") ? 0 : -1); });
  same("link", [](const std::string& r) { return outcome(::link((r + "/f").c_str(), (r + "/g").c_str())); });
  same("link onto existing: EEXIST",
       [](const std::string& r) { return outcome(::link((r + "/f").c_str(), (r + "/g").c_str())); });
  same("mkdir", [](const std::string& r) { return outcome(::mkdir((r + "/d").c_str(), 0755)); });
  same("link into a dir",
       [](const std::string& r) { return outcome(::link((r + "/f").c_str(), (r + "/d/h").c_str())); });
  same("link a directory: EPERM",
       [](const std::string& r) { return outcome(::link((r + "/d").c_str(), (r + "/d2").c_str())); });
  Outcome n = same("nlink 3", [](const std::string& r) { return nlink_of(r + "/g"); });
  EXPECT_EQ(n.ret, 3);
  struct stat f, g;
  ASSERT_EQ(::stat(at("f").c_str(), &f), 0);
  ASSERT_EQ(::stat(at("d/h").c_str(), &g), 0);
  EXPECT_EQ(f.st_ino, g.st_ino);
  // A write through one name is seen through the others.
  same("write through one name", [](const std::string& r) {
    Fd fd(::open((r + "/d/h").c_str(), O_WRONLY));
    return outcome(write_at(fd.get(), std::string("SHARED"), 0) ? 0 : -1);
  });
  EXPECT_EQ(read_file(at("f")), "SHARED bytes");
  EXPECT_EQ(read_file(at("g")), "SHARED bytes");
  same("unlink one name", [](const std::string& r) { return outcome(::unlink((r + "/f").c_str())); });
  n = same("nlink 2", [](const std::string& r) { return nlink_of(r + "/g"); });
  EXPECT_EQ(n.ret, 2);
  EXPECT_EQ(read_file(at("g")), "SHARED bytes");
  same("rename one link over the other",
       [](const std::string& r) { return outcome(::rename((r + "/g").c_str(), (r + "/d/h").c_str())); });
  n = same("both names were one inode: still 2 links", [](const std::string& r) { return nlink_of(r + "/d/h"); });
  same("the renamed name still exists as a link? (POSIX: rename of hard links to the same file does nothing)",
       [](const std::string& r) { return outcome(::access((r + "/g").c_str(), F_OK)); });
  expect_same_trees();
}

TEST_F(LinksTest, DirectoryLinkCounts) {
  same("mkdir d", [](const std::string& r) { return outcome(::mkdir((r + "/d").c_str(), 0755)); });
  same("nlink of an empty dir", [](const std::string& r) { return nlink_of(r + "/d"); });
  same("subdirs", [](const std::string& r) {
    return outcome(::mkdir((r + "/d/a").c_str(), 0755) | ::mkdir((r + "/d/b").c_str(), 0755) |
                   (write_file(r + "/d/file", "") ? 0 : -1));
  });
  Outcome n = same("nlink with two subdirs", [](const std::string& r) { return nlink_of(r + "/d"); });
  EXPECT_EQ(n.ret, 4);
  same("move a subdir out",
       [](const std::string& r) { return outcome(::rename((r + "/d/a").c_str(), (r + "/a").c_str())); });
  same("nlink after moving one out", [](const std::string& r) { return nlink_of(r + "/d"); });
  same("rmdir the other", [](const std::string& r) { return outcome(::rmdir((r + "/d/b").c_str())); });
  n = same("nlink after rmdir", [](const std::string& r) { return nlink_of(r + "/d"); });
  EXPECT_EQ(n.ret, 2);
}

TEST_F(LinksTest, Symlinks) {
  same("target", [](const std::string& r) { return outcome(write_file(r + "/target", "pointed at") ? 0 : -1); });
  same("symlink", [](const std::string& r) { return outcome(::symlink("target", (r + "/rel").c_str())); });
  same("dangling symlink",
       [](const std::string& r) { return outcome(::symlink("missing/x", (r + "/dangling").c_str())); });
  const std::string long_target(PATH_MAX - 1, 't');
  same("symlink of PATH_MAX-1 bytes",
       [&](const std::string& r) { return outcome(::symlink(long_target.c_str(), (r + "/long").c_str())); });
  same("symlink over existing: EEXIST",
       [](const std::string& r) { return outcome(::symlink("x", (r + "/rel").c_str())); });
  same("readlink", [](const std::string& r) {
    char buf[64];
    ssize_t n = ::readlink((r + "/rel").c_str(), buf, sizeof buf);
    return outcome(n == 6 && std::string(buf, 6) == "target" ? n : -1);
  });
  same("readlink of a file: EINVAL", [](const std::string& r) {
    char buf[64];
    return outcome(::readlink((r + "/target").c_str(), buf, sizeof buf));
  });
  same("lstat size is the target length", [](const std::string& r) {
    struct stat st;
    return ::lstat((r + "/dangling").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_size);
  });
  same("stat through a dangling link: ENOENT", [](const std::string& r) {
    struct stat st;
    return outcome(::stat((r + "/dangling").c_str(), &st));
  });
  same("O_NOFOLLOW on a link: ELOOP",
       [](const std::string& r) { return outcome(::open((r + "/rel").c_str(), O_RDONLY | O_NOFOLLOW)); });
  EXPECT_EQ(read_file(at("rel")), "pointed at");
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlink(at("long").c_str(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), long_target);
  expect_same_trees();
}

}  // namespace
}  // namespace peregrine::fstest
