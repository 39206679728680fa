// Permission checks (default_permissions) for an unprivileged user, side by
// side with a native directory. The volume is mounted with allow_other so
// that another user may reach it at all; a forked child drops to
// uid/gid 65534 and reports each outcome through a pipe.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <functional>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class PermissionsTest : public SideBySideTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.allow_other=true"}; }
};

TEST_F(PermissionsTest, UnprivilegedUserIsDeniedWhatModesForbid) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  same("setup", [](const std::string& r) {
    bool ok = write_file(r + "/f", "root's file", 0644) && write_file(r + "/p", "private", 0600) &&
              ::mkdir((r + "/d").c_str(), 0755) == 0 && write_file(r + "/d/x", "x", 0644) &&
              ::mkdir((r + "/w").c_str(), 0777) == 0 && ::chmod((r + "/w").c_str(), 0777) == 0 &&
              ::chmod((r + "/f").c_str(), 0644) == 0;
    return outcome(ok ? 0 : -1);
  });
  auto nobody = [&](const char* what, std::function<Outcome(const std::string&)> op) {
    return same(what, [&](const std::string& r) { return as_nobody([&] { return op(r); }); });
  };

  Outcome read = nobody("read a 0644 file",
                        [](const std::string& r) { return outcome(read_file(r + "/f") == "root's file" ? 0 : -1); });
  EXPECT_EQ(read.ret, 0) << "the unprivileged user cannot read at all: is allow_other in effect?";
  Outcome write = nobody("write a 0644 root file: EACCES",
                         [](const std::string& r) { return outcome(::open((r + "/f").c_str(), O_WRONLY)); });
  EXPECT_EQ(write.err, EACCES);
  nobody("read a 0600 file: EACCES",
         [](const std::string& r) { return outcome(::open((r + "/p").c_str(), O_RDONLY)); });
  nobody("truncate: EACCES", [](const std::string& r) { return outcome(::truncate((r + "/f").c_str(), 0)); });
  nobody("create in a 0755 dir: EACCES",
         [](const std::string& r) { return outcome(::open((r + "/d/new").c_str(), O_CREAT | O_WRONLY, 0644)); });
  nobody("unlink in a 0755 dir: EACCES", [](const std::string& r) { return outcome(::unlink((r + "/d/x").c_str())); });
  nobody("mkdir in a 0755 dir: EACCES",
         [](const std::string& r) { return outcome(::mkdir((r + "/d/sub").c_str(), 0755)); });
  nobody("rename out of a 0755 dir: EACCES",
         [](const std::string& r) { return outcome(::rename((r + "/d/x").c_str(), (r + "/w/x").c_str())); });
  nobody("chmod someone else's file: EPERM",
         [](const std::string& r) { return outcome(::chmod((r + "/f").c_str(), 0777)); });
  nobody("setxattr on a 0644 root file: EACCES",
         [](const std::string& r) { return outcome(::setxattr((r + "/f").c_str(), "user.x", "y", 1, 0)); });
  Outcome owner = nobody("create in a 0777 dir: owned by the caller", [](const std::string& r) {
    if (!write_file(r + "/w/mine", "mine", 0600)) return outcome(-1);
    struct stat st;
    return ::stat((r + "/w/mine").c_str(), &st) < 0 ? outcome(-1) : outcome(st.st_uid * 100000L + st.st_gid);
  });
  EXPECT_EQ(owner.ret, kNobody * 100000L + kNobody);
  nobody("chown own file to root: EPERM",
         [](const std::string& r) { return outcome(::chown((r + "/w/mine").c_str(), 0, 0)); });
  nobody("chmod own file", [](const std::string& r) { return outcome(::chmod((r + "/w/mine").c_str(), 0640)); });
  EXPECT_EQ(read_file(at("f")), "root's file") << "a denied write changed the file";
  expect_same_trees();
}

// Without fuse.allow_other the kernel lets only the mounting user in: FUSE's
// protection of other users from a daemon they did not start.
using PrivateMountTest = MountedTest;

TEST_F(PrivateMountTest, OtherUsersCannotEnterWithoutAllowOther) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("f"), "root's file", 0644));
  Outcome o = as_nobody([&] {
    struct stat st;
    return outcome(::stat((volume_->mountpoint() + "/f").c_str(), &st));
  });
  EXPECT_EQ(o, (Outcome{-1, EACCES}));
  EXPECT_EQ(read_file(at("f")), "root's file") << "root, the mounting user, is let in";
}

}  // namespace
}  // namespace peregrine::fstest
