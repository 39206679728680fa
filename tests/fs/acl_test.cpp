// POSIX ACLs side by side with a native directory (ext4 under /tmp, which
// mounts with acl): the same setfacl-level operations (the
// system.posix_acl_* xattrs the acl tools write), then the modes, the ACL
// values byte for byte, inheritance under a default ACL with a strict
// umask, chmod against the mask, permission checks for a named user, and
// setgid taken by an ACL change from a caller outside the file's group. The
// ACLs then survive kill -9 and fsck. With noacl they are refused.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/magic.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

constexpr uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08, kMask = 0x10, kOther = 0x20;
constexpr uint32_t kNoId = 0xffffffff;

struct AclEntry {
  uint16_t tag, perm;
  uint32_t id;
};

// The xattr form of an ACL, as libacl writes it.
std::string acl(std::initializer_list<AclEntry> entries) {
  std::string out("\x02\0\0\0", 4);
  for (const AclEntry& e : entries) {
    char b[8];
    std::memcpy(b, &e.tag, 2);
    std::memcpy(b + 2, &e.perm, 2);
    std::memcpy(b + 4, &e.id, 4);
    out.append(b, 8);
  }
  return out;
}

const char* const kAccess = "system.posix_acl_access";
const char* const kDefault = "system.posix_acl_default";

Outcome set(const std::string& path, const char* name, const std::string& value) {
  return outcome(::setxattr(path.c_str(), name, value.data(), value.size(), 0));
}

// The ACL xattr of `path`, or "errno N".
std::string get(const std::string& path, const char* name) {
  char buf[4096];
  ssize_t n = ::getxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? "errno " + std::to_string(errno) : std::string(buf, static_cast<size_t>(n));
}

long mode_of(const std::string& path) {
  struct statx stx;
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_MODE, &stx) != 0) return -1;
  return stx.stx_mode & 07777;
}

class AclTest : public SideBySideTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.allow_other=true"}; }
  void SetUp() override {
    SideBySideTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The reference must have ACLs itself, as ext4 and tmpfs do.
    std::string probe = native_->path() + "/probe";
    ASSERT_TRUE(write_file(probe, "x"));
    ASSERT_EQ(set(probe, kAccess, acl({{kUserObj, 6, kNoId}, {kGroupObj, 4, kNoId}, {kOther, 4, kNoId}})), Outcome{})
        << native_->path() << " has no POSIX ACLs to compare with";
    ::unlink(probe.c_str());
    ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
    old_umask_ = ::umask(077);
  }
  void TearDown() override {
    ::umask(old_umask_);
    SideBySideTest::TearDown();
  }

  // Both trees give the same mode and the same ACL values for `rel`.
  void expect_same_acls(const std::string& rel) {
    const std::string n = native_->path() + "/" + rel, m = at(rel);
    EXPECT_EQ(mode_of(n), mode_of(m)) << rel << ": mode (ext4 first) " << std::oct << mode_of(n) << " vs "
                                      << mode_of(m);
    EXPECT_EQ(get(n, kAccess), get(m, kAccess)) << rel << ": access ACL";
    EXPECT_EQ(get(n, kDefault), get(m, kDefault)) << rel << ": default ACL";
  }

  mode_t old_umask_ = 0;
};

const std::string kNamedUser = acl({{kUserObj, 6, kNoId},
                                    {kUser, 4, kNobody},
                                    {kGroupObj, 0, kNoId},
                                    {kGroup, 6, 100},
                                    {kMask, 6, kNoId},
                                    {kOther, 0, kNoId}});

TEST_F(AclTest, AnAccessAclSetsTheModeAndAMinimalOneIsJustTheMode) {
  // The first user's report: a file made under umask 077 given the ACL of
  // a 644 file (what cp -a does) must become 644.
  same("minimal ACL", [&](const std::string& root) {
    std::string f = root + "/minimal";
    if (!write_file(f, "data", 0666)) return outcome(-1);
    return set(f, kAccess, acl({{kUserObj, 6, kNoId}, {kGroupObj, 4, kNoId}, {kOther, 4, kNoId}}));
  });
  expect_same_acls("minimal");
  EXPECT_EQ(mode_of(at("minimal")), 0644);
  same("extended ACL", [&](const std::string& root) {
    std::string f = root + "/extended";
    if (!write_file(f, "data", 0600)) return outcome(-1);
    return set(f, kAccess, kNamedUser);
  });
  expect_same_acls("extended");
  same("back to minimal (setfacl -b)", [&](const std::string& root) {
    return set(root + "/extended", kAccess, acl({{kUserObj, 6, kNoId}, {kGroupObj, 6, kNoId}, {kOther, 0, kNoId}}));
  });
  expect_same_acls("extended");
  same("remove an ACL that is not there",
       [&](const std::string& root) { return outcome(::removexattr((root + "/minimal").c_str(), kAccess)); });
  Outcome bad = same("an ACL without an owner entry", [&](const std::string& root) {
    return set(root + "/minimal", kAccess, acl({{kGroupObj, 4, kNoId}, {kOther, 4, kNoId}}));
  });
  EXPECT_EQ(bad.err, EINVAL);
  expect_same_acls("minimal");
}

TEST_F(AclTest, ChmodRewritesTheMaskAndKeepsNamedEntries) {
  for (mode_t m : {0640, 0604, 0777, 0}) {
    same("chmod with an extended ACL", [&](const std::string& root) {
      std::string f = root + "/f";
      if (!write_file(f, "data", 0600) || set(f, kAccess, kNamedUser).ret != 0) return outcome(-1);
      return outcome(::chmod(f.c_str(), m));
    });
    expect_same_acls("f");
  }
}

TEST_F(AclTest, NewInodesInheritTheDefaultAclAndIgnoreTheUmask) {
  const std::string def =
      acl({{kUserObj, 7, kNoId}, {kUser, 7, kNobody}, {kGroupObj, 5, kNoId}, {kMask, 7, kNoId}, {kOther, 5, kNoId}});
  same("default ACL on a directory", [&](const std::string& root) {
    std::string d = root + "/d";
    if (::mkdir(d.c_str(), 0700) != 0) return outcome(-1);
    return set(d, kDefault, def);
  });
  same("create a file", [&](const std::string& root) {
    return outcome(::close(::open((root + "/d/file").c_str(), O_CREAT | O_WRONLY, 0666)));
  });
  same("create an executable", [&](const std::string& root) {
    return outcome(::close(::open((root + "/d/exe").c_str(), O_CREAT | O_WRONLY, 0751)));
  });
  same("O_TMPFILE then link", [&](const std::string& root) {
    Fd fd(::open((root + "/d").c_str(), O_TMPFILE | O_WRONLY, 0640));
    if (!fd.ok()) return outcome(-1);
    return outcome(::linkat(fd.get(), "", AT_FDCWD, (root + "/d/tmp").c_str(), AT_EMPTY_PATH));
  });
  same("mkdir", [&](const std::string& root) { return outcome(::mkdir((root + "/d/sub").c_str(), 0777)); });
  same("mkdir below",
       [&](const std::string& root) { return outcome(::mkdir((root + "/d/sub/deeper").c_str(), 0750)); });
  same("mkfifo", [&](const std::string& root) { return outcome(::mkfifo((root + "/d/fifo").c_str(), 0666)); });
  same("symlink", [&](const std::string& root) { return outcome(::symlink("file", (root + "/d/link").c_str())); });
  same("a file outside: the umask", [&](const std::string& root) {
    return outcome(::close(::open((root + "/plain").c_str(), O_CREAT | O_WRONLY, 0666)));
  });
  for (const char* rel : {"d", "d/file", "d/exe", "d/tmp", "d/sub", "d/sub/deeper", "d/fifo", "plain"})
    expect_same_acls(rel);
  EXPECT_EQ(mode_of(at("d/file")), 0664);  // not 0600: the umask does not apply here
  EXPECT_EQ(get(at("d/sub/deeper"), kDefault), def);
}

TEST_F(AclTest, TheKernelChecksNamedUsersAndGroups) {
  // Owned by root, mode 600: only the ACL lets nobody in.
  same("u:nobody:r", [&](const std::string& root) {
    std::string f = root + "/secret";
    if (!write_file(f, "for nobody", 0600)) return outcome(-1);
    return set(f, kAccess, kNamedUser);
  });
  same("nobody reads", [&](const std::string& root) {
    return as_nobody([&] {
      std::string got = read_file(root + "/secret");
      return got == "for nobody" ? Outcome{} : Outcome{-1, errno};
    });
  });
  Outcome w = same("nobody may not write", [&](const std::string& root) {
    return as_nobody([&] { return outcome(::open((root + "/secret").c_str(), O_WRONLY)); });
  });
  EXPECT_EQ(w.err, EACCES);
  same("the mask limits the named user", [&](const std::string& root) {
    return outcome(::chmod((root + "/secret").c_str(), 0600));  // mask ---
  });
  Outcome r = same("nobody may not read through a --- mask", [&](const std::string& root) {
    return as_nobody([&] { return outcome(::open((root + "/secret").c_str(), O_RDONLY)); });
  });
  EXPECT_EQ(r.err, EACCES);
  // A directory whose ACL gives nobody write and search.
  same("u:nobody:rwx on a directory", [&](const std::string& root) {
    std::string d = root + "/drop";
    if (::mkdir(d.c_str(), 0700) != 0) return outcome(-1);
    return set(
        d, kAccess,
        acl({{kUserObj, 7, kNoId}, {kUser, 7, kNobody}, {kGroupObj, 0, kNoId}, {kMask, 7, kNoId}, {kOther, 0, kNoId}}));
  });
  same("nobody creates in it", [&](const std::string& root) {
    return as_nobody([&] { return outcome(::close(::open((root + "/drop/mine").c_str(), O_CREAT | O_WRONLY, 0644))); });
  });
}

TEST_F(AclTest, AnAclChangeByAnOwnerOutsideTheGroupTakesSetgid) {
  for (gid_t gid : {gid_t{0}, gid_t{kNobody}}) {
    same("setfacl by the owner", [&](const std::string& root) {
      std::string f = root + "/sgid";
      ::unlink(f.c_str());
      if (!write_file(f, "x", 0600) || ::chown(f.c_str(), kNobody, gid) != 0 || ::chmod(f.c_str(), 02770) != 0)
        return outcome(-1);
      return as_nobody([&] {
        return set(f, kAccess, acl({{kUserObj, 7, kNoId}, {kGroupObj, 5, kNoId}, {kOther, 0, kNoId}}));
      });
    });
    expect_same_acls("sgid");
  }
}

TEST_F(AclTest, AclsSurviveKill9AndFsck) {
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0);
  ASSERT_EQ(set(at("d"), kDefault, kNamedUser), Outcome{});
  ASSERT_TRUE(write_file(at("d/f"), "x", 0666));
  ASSERT_EQ(set(at("d"), kAccess, kNamedUser), Outcome{});
  const std::string inherited = get(at("d/f"), kAccess);
  const long mode = mode_of(at("d/f"));
  Fd dir(::open(at("d").c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_EQ(::fsync(dir.get()), 0);  // the last change: the journal is durable up to it
  dir.reset();
  volume_->kill9();
  std::vector<std::string> check = {peregrine_bin(), "fsck", "-n"};
  check.insert(check.end(), volume_->members().begin(), volume_->members().end());
  RunResult fsck = run(check);
  EXPECT_EQ(fsck.code, 0) << fsck.describe();
  RunResult m = volume_->mount({"-o", "fuse.allow_other=true"});
  ASSERT_EQ(m.code, 0) << m.describe();
  EXPECT_EQ(get(at("d"), kDefault), kNamedUser);
  EXPECT_EQ(get(at("d"), kAccess), kNamedUser);
  EXPECT_EQ(get(at("d/f"), kAccess), inherited);
  EXPECT_EQ(mode_of(at("d/f")), mode);
}

class NoAclTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "noacl"}; }
};

TEST_F(NoAclTest, AclsKeptFromAMountWithThemAreHiddenAndNotEnforced) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult m = volume_->mount({"-o", "acl,fuse.allow_other=true"});
  ASSERT_EQ(m.code, 0) << m.describe();
  ASSERT_TRUE(write_file(at("secret"), "x", 0600));
  ASSERT_EQ(set(at("secret"), kAccess, kNamedUser), Outcome{});  // u:nobody:r
  ASSERT_EQ(as_nobody([&] { return outcome(::open(at("secret").c_str(), O_RDONLY)); }).err, 0);
  ASSERT_EQ(volume_->unmount(), 0);
  m = volume_->mount({"-o", "noacl,fuse.allow_other=true"});
  ASSERT_EQ(m.code, 0) << m.describe();
  EXPECT_EQ(get(at("secret"), kAccess), "errno " + std::to_string(EOPNOTSUPP));
  char names[1024];
  ssize_t n = ::listxattr(at("secret").c_str(), names, sizeof names);
  EXPECT_EQ(std::string(names, n > 0 ? static_cast<size_t>(n) : 0).find("posix_acl"), std::string::npos);
  // The mode's group bits show the old mask (rw-, as ls -l showed it), and
  // only the mode counts now: nobody is "other", with no rights.
  EXPECT_EQ(mode_of(at("secret")), 0660);
  EXPECT_EQ(as_nobody([&] { return outcome(::open(at("secret").c_str(), O_RDONLY)); }).err, EACCES);
}

TEST_F(NoAclTest, AclsAreRefusedAndTheUmaskApplies) {
  ASSERT_TRUE(write_file(at("f"), "x", 0600));
  EXPECT_EQ(set(at("f"), kAccess, acl({{kUserObj, 6, kNoId}, {kGroupObj, 4, kNoId}, {kOther, 4, kNoId}})),
            (Outcome{-1, EOPNOTSUPP}));
  EXPECT_EQ(mode_of(at("f")), 0600);
  mode_t old = ::umask(027);
  EXPECT_EQ(::mkdir(at("d").c_str(), 0777), 0);
  ::umask(old);
  EXPECT_EQ(mode_of(at("d")), 0750);
}

}  // namespace
}  // namespace peregrine::fstest
