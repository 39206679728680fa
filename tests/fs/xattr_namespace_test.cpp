// Extended attribute names outside the four Linux namespaces (user.,
// trusted., security., system.) are refused with EOPNOTSUPP, as native
// filesystems do (FUSE passes every name to the daemon, so the daemon must).
#include <sys/xattr.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using XattrNamespaceTest = SideBySideTest;

TEST_F(XattrNamespaceTest, UnknownNamespaceIsRefused) {
  same("file", [](const std::string& r) { return outcome(write_file(r + "/f", "data") ? 0 : -1); });
  Outcome o = same("set bogus.t",
                   [](const std::string& r) { return outcome(::setxattr((r + "/f").c_str(), "bogus.t", "t", 1, 0)); });
  EXPECT_EQ(o.err, EOPNOTSUPP);
  same("set a name without a namespace",
       [](const std::string& r) { return outcome(::setxattr((r + "/f").c_str(), "plain", "t", 1, 0)); });
}

}  // namespace
}  // namespace peregrine::fstest
