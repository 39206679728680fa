// Extended attributes: set, get, list, remove, XATTR_CREATE/XATTR_REPLACE
// errors, ERANGE and size queries, side by side with a native directory.
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using XattrTest = SideBySideTest;

Outcome set(const std::string& path, const char* name, const std::string& value, int flags) {
  return outcome(::setxattr(path.c_str(), name, value.data(), value.size(), flags));
}

std::vector<std::string> list(const std::string& path) {
  char buf[4096];
  ssize_t n = ::listxattr(path.c_str(), buf, sizeof buf);
  std::vector<std::string> names;
  for (ssize_t i = 0; i < n;) {
    std::string name = buf + i;
    i += static_cast<ssize_t>(name.size()) + 1;
    if (name.starts_with("user.")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(XattrTest, SetGetListRemove) {
  const std::string big = pattern(3000, 9);
  same("file", [](const std::string& r) { return outcome(write_file(r + "/f", "data") ? 0 : -1); });
  same("dir", [](const std::string& r) { return outcome(::mkdir((r + "/d").c_str(), 0755)); });
  same("set on a file", [](const std::string& r) { return set(r + "/f", "user.one", "1", 0); });
  same("set binary value", [&](const std::string& r) { return set(r + "/f", "user.big", big, 0); });
  same("set empty value", [](const std::string& r) { return set(r + "/f", "user.empty", "", 0); });
  same("set on a dir", [](const std::string& r) { return set(r + "/d", "user.dir", "on a dir", 0); });
  same("XATTR_CREATE existing: EEXIST",
       [](const std::string& r) { return set(r + "/f", "user.one", "x", XATTR_CREATE); });
  same("XATTR_REPLACE missing: ENODATA",
       [](const std::string& r) { return set(r + "/f", "user.none", "x", XATTR_REPLACE); });
  same("XATTR_REPLACE existing", [](const std::string& r) { return set(r + "/f", "user.one", "uno", XATTR_REPLACE); });
  same("size query",
       [](const std::string& r) { return outcome(::getxattr((r + "/f").c_str(), "user.big", nullptr, 0)); });
  same("too small a buffer: ERANGE", [](const std::string& r) {
    char buf[10];
    return outcome(::getxattr((r + "/f").c_str(), "user.big", buf, sizeof buf));
  });
  same("get missing: ENODATA", [](const std::string& r) {
    char buf[10];
    return outcome(::getxattr((r + "/f").c_str(), "user.none", buf, sizeof buf));
  });
  char buf[4096];
  ssize_t n = ::getxattr(at("f").c_str(), "user.big", buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), big);
  n = ::getxattr(at("f").c_str(), "user.one", buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "uno");
  EXPECT_EQ(list(at("f")), (std::vector<std::string>{"user.big", "user.empty", "user.one"}));
  EXPECT_EQ(list(at("f")), list(native_->path() + "/f"));
  same("remove", [](const std::string& r) { return outcome(::removexattr((r + "/f").c_str(), "user.one")); });
  same("remove again: ENODATA",
       [](const std::string& r) { return outcome(::removexattr((r + "/f").c_str(), "user.one")); });
  EXPECT_EQ(list(at("f")), (std::vector<std::string>{"user.big", "user.empty"}));
  same("list size query", [](const std::string& r) {
    char names[4096];
    ssize_t len = ::listxattr((r + "/f").c_str(), names, sizeof names);
    ssize_t user = 0;
    for (ssize_t i = 0; i < len;) {
      std::string name = names + i;
      i += static_cast<ssize_t>(name.size()) + 1;
      if (name.starts_with("user.")) user += static_cast<ssize_t>(name.size()) + 1;
    }
    return outcome(user);
  });
  expect_same_trees();
}

TEST_F(XattrTest, AttributesFollowLinksAndRenames) {
  same("file", [](const std::string& r) { return outcome(write_file(r + "/f", "data") ? 0 : -1); });
  same("set", [](const std::string& r) { return set(r + "/f", "user.k", "v", 0); });
  same("hard link", [](const std::string& r) { return outcome(::link((r + "/f").c_str(), (r + "/g").c_str())); });
  same("rename", [](const std::string& r) { return outcome(::rename((r + "/f").c_str(), (r + "/h").c_str())); });
  same("visible through the other name", [](const std::string& r) {
    char b[8];
    ssize_t n = ::getxattr((r + "/g").c_str(), "user.k", b, sizeof b);
    return outcome(n == 1 && b[0] == 'v' ? 0 : -1);
  });
  same("trusted.* needs CAP_SYS_ADMIN (root has it)",
       [](const std::string& r) { return set(r + "/h", "trusted.t", "t", 0); });
  expect_same_trees();
}

}  // namespace
}  // namespace peregrine::fstest
