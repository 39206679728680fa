// Regular files and directories, side by side with a native directory:
// create, read, write, stat, mkdir, rmdir and their errors.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class FilesDirsTest : public CacheModes<SideBySideTest> {};

TEST_P(FilesDirsTest, CreateWriteReadStat) {
  const std::string data = pattern(300000, 1);  // not a multiple of any block size
  same("create exclusive", [](const std::string& r) {
    int fd = ::open((r + "/f").c_str(), O_CREAT | O_EXCL | O_RDWR, 0640);
    long ret = fd < 0 ? -1 : 0;
    int e = errno;
    if (fd >= 0) ::close(fd);
    errno = e;
    return outcome(ret);
  });
  same("create exclusive again: EEXIST",
       [](const std::string& r) { return outcome(::open((r + "/f").c_str(), O_CREAT | O_EXCL | O_RDWR, 0640)); });
  same("write", [&](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_WRONLY));
    return outcome(::pwrite(fd.get(), data.data(), data.size(), 0));
  });
  same("append", [&](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_WRONLY | O_APPEND));
    return outcome(::write(fd.get(), "tail", 4));
  });
  same("size", [](const std::string& r) {
    struct stat st;
    return ::stat((r + "/f").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_size);
  });
  EXPECT_EQ(read_file(at("f")), data + "tail");
  same("open missing: ENOENT", [](const std::string& r) { return outcome(::open((r + "/nope").c_str(), O_RDONLY)); });
  same("O_TRUNC", [](const std::string& r) {
    Fd fd(::open((r + "/f").c_str(), O_WRONLY | O_TRUNC));
    struct stat st;
    return ::fstat(fd.get(), &st) < 0 ? outcome(-1) : outcome(st.st_size);
  });
  expect_same_trees();
}

TEST_P(FilesDirsTest, DirectoriesAndTheirErrors) {
  same("mkdir", [](const std::string& r) { return outcome(::mkdir((r + "/d").c_str(), 0750)); });
  same("mkdir again: EEXIST", [](const std::string& r) { return outcome(::mkdir((r + "/d").c_str(), 0750)); });
  same("mkdir under a missing parent: ENOENT",
       [](const std::string& r) { return outcome(::mkdir((r + "/no/d").c_str(), 0750)); });
  same("file in dir", [](const std::string& r) { return outcome(write_file(r + "/d/f", "x") ? 0 : -1); });
  same("mkdir under a file: ENOTDIR",
       [](const std::string& r) { return outcome(::mkdir((r + "/d/f/x").c_str(), 0750)); });
  same("rmdir non-empty: ENOTEMPTY", [](const std::string& r) { return outcome(::rmdir((r + "/d").c_str())); });
  same("rmdir a file: ENOTDIR", [](const std::string& r) { return outcome(::rmdir((r + "/d/f").c_str())); });
  same("unlink a directory: EISDIR", [](const std::string& r) { return outcome(::unlink((r + "/d").c_str())); });
  same("open a directory for writing: EISDIR",
       [](const std::string& r) { return outcome(::open((r + "/d").c_str(), O_WRONLY)); });
  same("unlink", [](const std::string& r) { return outcome(::unlink((r + "/d/f").c_str())); });
  same("unlink again: ENOENT", [](const std::string& r) { return outcome(::unlink((r + "/d/f").c_str())); });
  same("rmdir empty", [](const std::string& r) { return outcome(::rmdir((r + "/d").c_str())); });
  same("stat removed: ENOENT", [](const std::string& r) {
    struct stat st;
    return outcome(::stat((r + "/d").c_str(), &st));
  });
  same("nested mkdirs", [](const std::string& r) {
    return outcome(::mkdir((r + "/a").c_str(), 0755) | ::mkdir((r + "/a/b").c_str(), 0700) |
                   ::mkdir((r + "/a/b/c").c_str(), 0777));
  });
  expect_same_trees();
}

TEST_P(FilesDirsTest, NameLengthLimits) {
  const std::string longest(NAME_MAX, 'n');
  const std::string too_long(NAME_MAX + 1, 'n');
  same("NAME_MAX name", [&](const std::string& r) { return outcome(write_file(r + "/" + longest, "max") ? 0 : -1); });
  same("NAME_MAX + 1: ENAMETOOLONG",
       [&](const std::string& r) { return outcome(::open((r + "/" + too_long).c_str(), O_CREAT | O_WRONLY, 0644)); });
  EXPECT_EQ(read_file(at(longest)), "max");
  // A deep path close to PATH_MAX, built with relative mkdirs.
  same("deep path", [&](const std::string& r) {
    std::string path = r;
    std::string comp(200, 'p');
    for (int i = 0; i < (PATH_MAX - 200) / 201; ++i) {  // the same depth on both roots
      path += "/" + comp;
      if (::mkdir(path.c_str(), 0755) != 0) return outcome(-1);
    }
    return outcome(write_file(path + "/leaf", "deep") && read_file(path + "/leaf") == "deep" ? 0 : -1);
  });
  expect_same_trees();
}

PEREGRINE_FOR_CACHE_MODES(FilesDirsTest);

}  // namespace
}  // namespace peregrine::fstest
