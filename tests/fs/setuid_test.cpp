// Set-user-ID and set-group-ID bits lost to a write, truncate, O_TRUNC
// open, fallocate or chown, side by side with a native directory (ext4 or
// whatever /tmp is): a caller without CAP_FSETID (uid/gid 65534 here)
// takes S_ISUID, and S_ISGID when the file is group-executable or the
// caller is not in its group (without group-execute, setgid means mandatory
// locking and stays for members); root keeps both, except through chown.
// Each mode is read back with statx(STATX_MODE) alone, as stat -c %a does,
// so a kernel attribute cache left stale is seen too. File capabilities
// go with any write. In both cache modes.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <functional>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

// The permission bits as statx(2) reports them when asked for the mode only.
long mode_of(const std::string& path) {
  struct statx stx;
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_MODE, &stx) != 0) return -1;
  return stx.stx_mode & 07777;
}

bool append(const std::string& path, const std::string& data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND));
  return fd.ok() && ::write(fd.get(), data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

// kNobodyInGroup1: nobody with group 1 as a supplementary group, which
// FUSE does not pass on (the daemon reads it from /proc).
enum class Who { kNobody, kNobodyInGroup1, kRoot };

struct Case {
  const char* what;
  mode_t mode;
  gid_t gid;  // the file's group
  Who who;
  std::function<bool(const std::string& path)> op;
  long expected;  // the mode afterwards (ext4's)
};

class SetuidTest : public CacheModes<SideBySideTest> {
 protected:
  std::vector<std::string> mount_options() override {
    std::vector<std::string> o = CacheModes<SideBySideTest>::mount_options();
    o.insert(o.end(), {"-o", "fuse.allow_other=true"});
    return o;
  }

  // Creates the file with `c.mode` and `c.gid` in both trees, runs the
  // operation, and returns the mode it leaves (the same in both).
  void check(const Case& c, const std::string& name) {
    Outcome o = same(c.what, [&](const std::string& root) {
      const std::string path = root + "/" + name;
      if (!write_file(path, "0123456789") || ::chown(path.c_str(), 0, c.gid) != 0 ||
          ::chmod(path.c_str(), c.mode) != 0) {
        return outcome(-1);
      }
      auto run = [&] { return outcome(c.op(path) ? 0 : -1); };
      Outcome done = c.who == Who::kNobody           ? as_nobody(run)
                     : c.who == Who::kNobodyInGroup1 ? as_nobody(run, {1})
                                                     : run();
      if (done.ret != 0) return Outcome{-1, done.err};
      return outcome(mode_of(path));
    });
    EXPECT_EQ(o.ret, c.expected) << c.what << ": " << std::oct << o.ret << " instead of " << c.expected;
  }
};

TEST_P(SetuidTest, WritesTruncatesAndChownsTakeTheBitsAsOnALocalFilesystem) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  auto write_x = [](const std::string& p) { return append(p, "x"); };
  auto write_block = [](const std::string& p) {
    Fd fd(::open(p.c_str(), O_WRONLY));
    return fd.ok() && write_at(fd.get(), pattern(4096, 41), 4096);  // block-aligned: the other write path
  };
  auto truncate0 = [](const std::string& p) { return ::truncate(p.c_str(), 0) == 0; };
  auto open_trunc = [](const std::string& p) { return Fd(::open(p.c_str(), O_WRONLY | O_TRUNC)).ok(); };
  auto allocate = [](const std::string& p) {
    Fd fd(::open(p.c_str(), O_WRONLY));
    return fd.ok() && ::fallocate(fd.get(), 0, 0, 8192) == 0;
  };
  auto chown_1 = [](const std::string& p) { return ::chown(p.c_str(), 1, 1) == 0; };
  auto chown_none = [](const std::string& p) { return ::chown(p.c_str(), -1, -1) == 0; };

  const Case cases[] = {
      {"write by another user: both go", 06777, 0, Who::kNobody, write_x, 0777},
      {"block-aligned write by another user: both go", 06777, 0, Who::kNobody, write_block, 0777},
      {"write by a member of the group, not group-executable: setgid (locking) stays", 06767, kNobody, Who::kNobody,
       write_x, 02767},
      {"write by a non-member, not group-executable: both go", 06767, 0, Who::kNobody, write_x, 0767},
      {"write by a supplementary member, not group-executable: setgid stays", 06767, 1, Who::kNobodyInGroup1, write_x,
       02767},
      {"block-aligned write by a supplementary member, not group-executable: setgid stays", 06767, 1,
       Who::kNobodyInGroup1, write_block, 02767},
      {"write by root (CAP_FSETID): both stay", 06777, 0, Who::kRoot, write_x, 06777},
      {"truncate by another user: both go", 06777, 0, Who::kNobody, truncate0, 0777},
      {"truncate by a member, not group-executable: setgid stays", 06767, kNobody, Who::kNobody, truncate0, 02767},
      {"truncate by root: both stay", 06777, 0, Who::kRoot, truncate0, 06777},
      {"O_TRUNC open by another user: both go", 06777, 0, Who::kNobody, open_trunc, 0777},
      {"O_TRUNC open by root: both stay", 06777, 0, Who::kRoot, open_trunc, 06777},
      {"fallocate by another user: both go", 06777, 0, Who::kNobody, allocate, 0777},
      {"chown by root: both go", 06777, 0, Who::kRoot, chown_1, 0777},
      {"chown by root, not group-executable: setgid stays", 06767, 0, Who::kRoot, chown_1, 02767},
      {"chown to -1, -1 by root: suid goes", 06777, 0, Who::kRoot, chown_none, 0777},
  };
  int n = 0;
  for (const Case& c : cases) check(c, "f" + std::to_string(n++));
  // Contents, owners and modes alike in both trees (the writes happened).
  expect_same_trees();
}

// chown takes the bits from every file that is not a directory, as from a
// regular file (the VFS's chown_common): FIFOs, device nodes and sockets
// too, by root or by the owner, to new ids or to -1, -1. A directory keeps
// them (setgid there means "new entries inherit the group").
TEST_P(SetuidTest, ChownTakesTheBitsFromEveryNonDirectory) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  struct Kind {
    const char* name;
    std::function<int(const std::string& path)> make;
    bool directory = false;
  };
  const Kind kinds[] = {
      {"fifo", [](const std::string& p) { return ::mkfifo(p.c_str(), 0600); }},
      {"char device", [](const std::string& p) { return ::mknod(p.c_str(), S_IFCHR | 0600, makedev(1, 3)); }},
      {"block device", [](const std::string& p) { return ::mknod(p.c_str(), S_IFBLK | 0600, makedev(7, 200)); }},
      {"socket",
       [](const std::string& p) {
         int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
         sockaddr_un addr{};
         addr.sun_family = AF_UNIX;
         p.copy(addr.sun_path, sizeof addr.sun_path - 1);
         int rc = ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
         ::close(s);
         return rc;
       }},
      {"directory", [](const std::string& p) { return ::mkdir(p.c_str(), 0700); }, true},
  };
  struct Chown {
    const char* what;
    mode_t mode;
    Who who;
    uid_t uid;  // passed to chown(2)
    gid_t gid;
    long expected;  // the mode afterwards of a non-directory (ext4's)
  };
  const Chown chowns[] = {
      {"chown by root", 06555, Who::kRoot, 1, 1, 0555},
      {"chown to -1, -1 by root", 06555, Who::kRoot, static_cast<uid_t>(-1), static_cast<gid_t>(-1), 0555},
      {"chown by root, not group-executable: setgid stays", 06545, Who::kRoot, 1, 1, 02545},
      {"chown by the owner to its own group", 06555, Who::kNobody, kNobody, kNobody, 0555},
  };
  int n = 0;
  for (const Kind& k : kinds) {
    for (const Chown& c : chowns) {
      const std::string name = "s" + std::to_string(n++);
      const std::string what = std::string(c.what) + " of a " + k.name;
      Outcome o = same(what.c_str(), [&](const std::string& root) {
        const std::string path = root + "/" + name;
        const uid_t owner = c.who == Who::kNobody ? kNobody : 0;
        if (k.make(path) != 0 || ::chown(path.c_str(), owner, owner) != 0 || ::chmod(path.c_str(), c.mode) != 0) {
          return outcome(-1);
        }
        auto op = [&] { return outcome(::chown(path.c_str(), c.uid, c.gid)); };
        Outcome done = c.who == Who::kNobody ? as_nobody(op) : op();
        if (done.ret != 0) return Outcome{-2, done.err};
        return outcome(mode_of(path));
      });
      const long expected = k.directory ? c.mode : c.expected;
      EXPECT_EQ(o.ret, expected) << what << ": " << std::oct << o.ret << " instead of " << expected;
    }
  }
  expect_same_trees();
}

// File capabilities (security.capability) go with any write, root's too.
TEST_P(SetuidTest, AWriteRemovesFileCapabilities) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  vfs_cap_data cap{};
  cap.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
  cap.data[0].permitted = 1u << CAP_NET_RAW;
  for (Who who : {Who::kRoot, Who::kNobody}) {
    const std::string name = who == Who::kRoot ? "by-root" : "by-nobody";
    same(("write " + name + ": the capability is gone").c_str(), [&](const std::string& root) {
      const std::string path = root + "/" + name;
      if (!write_file(path, "binary") || ::chmod(path.c_str(), 0777) != 0 ||
          ::setxattr(path.c_str(), "security.capability", &cap, sizeof cap, 0) != 0) {
        return outcome(-1);
      }
      Outcome w = who == Who::kNobody ? as_nobody([&] { return outcome(append(path, "!") ? 0 : -1); })
                                      : outcome(append(path, "!") ? 0 : -1);
      if (w.ret != 0) return Outcome{-2, w.err};
      char buf[64];
      return outcome(::getxattr(path.c_str(), "security.capability", buf, sizeof buf));
    });
  }
  expect_same_trees();
}

PEREGRINE_FOR_CACHE_MODES(SetuidTest);

// The loss is journaled like a chmod: it survives a crash once fsync'd.
class SetuidDurabilityTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.allow_other=true"}; }
};

TEST_F(SetuidDurabilityTest, TheClearedModeSurvivesKill9) {
  ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("f"), "data"));
  ASSERT_EQ(::chmod(at("f").c_str(), 06777), 0);
  Outcome o = as_nobody([&] { return outcome(append(at("f"), "+more") ? 0 : -1); });
  ASSERT_EQ(o.ret, 0) << o.err;
  EXPECT_EQ(mode_of(at("f")), 0777);
  {
    Fd fd(::open(at("f").c_str(), O_RDONLY));
    ASSERT_EQ(::fsync(fd.get()), 0);
  }
  volume_->kill9();
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(mode_of(at("f")), 0777) << "the cleared bits came back after a crash";
  EXPECT_EQ(read_file(at("f")), "data+more");
}

}  // namespace
}  // namespace peregrine::fstest
