// What users copy data with, side by side with a native directory (ext4
// under /tmp): a source tree with every kind of metadata (modes with
// setuid/setgid, owners, access and default ACLs, user and trusted xattrs,
// hard links, a sparse file, symlinks, a FIFO, a device node, fixed
// times) is copied by cp -a, rsync -aHAXS and tar --xattrs --acls into
// the native directory and into the mount, and the two copies must be
// alike in all of it. Then the same tools copy the mount's tree back out,
// which must give what copying the native tree gives. In both cache modes.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <sstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

// Everything of one entry that a faithful copy keeps.
struct Meta {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  off_t size = 0;
  dev_t rdev = 0;
  std::string content;                        // hash of a file, target of a symlink
  std::map<std::string, std::string> xattrs;  // user.*, trusted.*, system.posix_acl_*
  int64_t mtime_ns = 0;
  bool sparse = false;  // fewer blocks than the size needs
  std::string link_to;  // the first path with the same inode, for hard links
  bool operator==(const Meta&) const = default;
};

std::string describe(const Meta& m) {
  std::ostringstream o;
  o << std::oct << "mode " << m.mode << std::dec << " uid " << m.uid << " gid " << m.gid << " size " << m.size
    << " rdev " << m.rdev << " mtime " << m.mtime_ns << (m.sparse ? " sparse" : "") << " link_to '" << m.link_to
    << "' content " << m.content << " xattrs";
  for (const auto& [k, v] : m.xattrs) o << " " << k << "(" << v.size() << " bytes)";
  return o.str();
}

bool kept_xattr(const std::string& name) {
  return name.starts_with("user.") || name.starts_with("trusted.") || name.starts_with("system.posix_acl_");
}

std::map<std::string, Meta> snapshot(const std::string& root) {
  std::map<ino_t, std::string> first_path;
  std::map<std::string, Meta> out;
  walk_tree(root, [&](const std::string& r, const struct stat& st) {
    const std::string p = root + "/" + r;
    Meta m;
    m.mode = st.st_mode;
    m.uid = st.st_uid;
    m.gid = st.st_gid;
    m.size = S_ISDIR(st.st_mode) ? 0 : st.st_size;
    m.rdev = st.st_rdev;
    // A directory's mtime is the tools' own business (they set it last, or not).
    if (!S_ISDIR(st.st_mode)) m.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    if (S_ISREG(st.st_mode)) {
      m.content = std::to_string(hash_file(p));
      m.sparse = st.st_blocks * 512 < st.st_size;
      auto [it, first] = first_path.try_emplace(st.st_ino, r);
      if (!first) m.link_to = it->second;
    }
    if (S_ISLNK(st.st_mode)) m.content = read_symlink(p);
    if (!S_ISLNK(st.st_mode)) m.xattrs = read_xattrs(p, kept_xattr);
    out[r] = m;
  });
  return out;
}

// The differences between the reference (ext4) copy and the mount's.
std::string differences(const std::map<std::string, Meta>& ref, const std::map<std::string, Meta>& got) {
  std::string out;
  for (const auto& [k, v] : ref) {
    auto it = got.find(k);
    if (it == got.end())
      out += "  missing: " + k + "\n";
    else if (!(it->second == v))
      out += "  " + k + ":\n    ext4:      " + describe(v) + "\n    peregrine: " + describe(it->second) + "\n";
  }
  for (const auto& [k, v] : got)
    if (!ref.count(k)) out += "  extra: " + k + "\n";
  return out;
}

// xattr form of an ACL: (tag, perm, id) triples.
std::string acl(std::initializer_list<std::array<uint32_t, 3>> entries) {
  std::string out("\x02\0\0\0", 4);
  for (const auto& e : entries) {
    uint16_t tag = static_cast<uint16_t>(e[0]), perm = static_cast<uint16_t>(e[1]);
    char b[8];
    std::memcpy(b, &tag, 2);
    std::memcpy(b + 2, &perm, 2);
    std::memcpy(b + 4, &e[2], 4);
    out.append(b, 8);
  }
  return out;
}

bool xset(const std::string& path, const char* name, const std::string& value) {
  return ::lsetxattr(path.c_str(), name, value.data(), value.size(), 0) == 0;
}

bool set_mtime(const std::string& path, time_t sec, long nsec) {
  struct timespec ts[2] = {{sec, nsec}, {sec, nsec}};
  return ::utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0;
}

// The source tree every tool copies, on the native filesystem.
void make_source(const std::string& s) {
  constexpr uint32_t kNone = 0xffffffff;
  ASSERT_EQ(::mkdir(s.c_str(), 0750), 0);
  ASSERT_TRUE(write_file(s + "/plain", "plain text\n", 0644));
  ASSERT_TRUE(write_file(s + "/private", "secret\n", 0600));
  ASSERT_EQ(::chown((s + "/private").c_str(), kNobody, kNobody), 0);
  ASSERT_TRUE(write_file(s + "/tool", "#!/bin/sh\n", 0644));
  ASSERT_EQ(::chmod((s + "/tool").c_str(), 04755), 0);
  ASSERT_TRUE(write_file(s + "/shared", "group\n", 0644));
  ASSERT_EQ(::chown((s + "/shared").c_str(), 0, 100), 0);
  ASSERT_EQ(::chmod((s + "/shared").c_str(), 02775), 0);
  // ACLs: an extended access ACL, and a directory with a default ACL and
  // a file that inherited it.
  ASSERT_TRUE(write_file(s + "/acl", "acl\n", 0640));
  ASSERT_TRUE(xset(s + "/acl", "system.posix_acl_access",
                   acl({{1, 6, kNone}, {2, 4, kNobody}, {4, 4, kNone}, {8, 6, 100}, {16, 6, kNone}, {32, 0, kNone}})));
  ASSERT_EQ(::mkdir((s + "/inherit").c_str(), 0755), 0);
  ASSERT_TRUE(xset(s + "/inherit", "system.posix_acl_default",
                   acl({{1, 7, kNone}, {2, 7, kNobody}, {4, 5, kNone}, {16, 7, kNone}, {32, 5, kNone}})));
  ASSERT_TRUE(write_file(s + "/inherit/child", "child\n", 0666));
  ASSERT_EQ(::mkdir((s + "/inherit/subdir").c_str(), 0777), 0);
  // xattrs on a file and a directory, one with a binary value.
  ASSERT_TRUE(xset(s + "/plain", "user.comment", "hello"));
  ASSERT_TRUE(xset(s + "/plain", "trusted.tag", std::string("\0\1\2", 3)));
  ASSERT_TRUE(xset(s + "/inherit", "user.dir", "yes"));
  // Hard links, a sparse file, symlinks, a FIFO, a device node.
  ASSERT_TRUE(write_file(s + "/linked", "linked\n", 0644));
  ASSERT_EQ(::link((s + "/linked").c_str(), (s + "/linked-too").c_str()), 0);
  {
    Fd fd(::open((s + "/sparse").c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(write_at(fd.get(), pattern(4096, 7), 4 << 20));
    ASSERT_EQ(::ftruncate(fd.get(), 8 << 20), 0);
  }
  ASSERT_EQ(::symlink("plain", (s + "/rel-link").c_str()), 0);
  ASSERT_EQ(::symlink("/nonexistent/target", (s + "/dangling").c_str()), 0);
  ASSERT_EQ(::mkfifo((s + "/fifo").c_str(), 0620), 0);
  ASSERT_EQ(::mknod((s + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  // Fixed times, directories last (their entries changed them).
  time_t t = 1600000000;
  for (const char* f : {"plain", "private", "tool", "shared", "acl", "inherit/child", "linked", "sparse", "rel-link",
                        "dangling", "fifo", "null"}) {
    ASSERT_TRUE(set_mtime(s + "/" + f, t, 123456789)) << f;
    t += 86400;
  }
}

class CopyToolsTest : public CacheModes<SideBySideTest> {
 protected:
  void SetUp() override {
    CacheModes<SideBySideTest>::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(::chmod(volume_->mountpoint().c_str(), 0755), 0);
    for (const char* tool : {"cp", "rsync", "tar", "setfacl"}) {
      RunResult r = run({"sh", "-c", std::string("command -v ") + tool});
      if (r.code != 0) GTEST_SKIP() << tool << " is not installed (tools/install-deps installs it)";
    }
    src_ = native_->path() + "/src";
    make_source(src_);
  }

  void run_ok(const std::vector<std::string>& argv) {
    RunResult r = run(argv);
    ASSERT_EQ(r.code, 0) << r.describe();
  }

  // `copy(from, to)` into the native directory and into the mount; then
  // the two copies must be alike.
  void expect_same_copies(const char* what, const std::function<void(const std::string&, const std::string&)>& copy,
                          const std::string& name) {
    copy(src_, native_->path() + "/" + name);
    copy(src_, at(name));
    const std::string diff = differences(snapshot(native_->path() + "/" + name), snapshot(at(name)));
    EXPECT_TRUE(diff.empty()) << what << " into ext4 and into peregrine differ:\n" << diff;
    // Sanity: the reference copy kept what it was given.
    auto ref = snapshot(native_->path() + "/" + name);
    ASSERT_TRUE(ref.count("acl") && ref["acl"].xattrs.count("system.posix_acl_access")) << what;
    EXPECT_EQ(ref["tool"].mode & 07777, 04755u) << what;
  }

  std::string src_;
};

auto cp_a = [](const std::string& from, const std::string& to) {
  RunResult r = run({"cp", "-a", from, to});
  ASSERT_EQ(r.code, 0) << r.describe();
};

auto rsync_all = [](const std::string& from, const std::string& to) {
  RunResult r = run({"rsync", "-aHAXS", from + "/", to + "/"});
  ASSERT_EQ(r.code, 0) << r.describe();
};

auto tar_pipe = [](const std::string& from, const std::string& to) {
  ASSERT_EQ(::mkdir(to.c_str(), 0700), 0);
  const std::string flags = "--xattrs --acls --xattrs-include='*' --sparse --numeric-owner";
  RunResult r =
      run({"sh", "-c", "tar " + flags + " -cpf - -C '" + from + "' . | tar " + flags + " -xpf - -C '" + to + "'"});
  ASSERT_EQ(r.code, 0) << r.describe();
};

TEST_P(CopyToolsTest, CpArchiveKeepsEverythingExt4Keeps) { expect_same_copies("cp -a", cp_a, "cp"); }

TEST_P(CopyToolsTest, RsyncWithAclsXattrsLinksAndSparseKeepsEverythingExt4Keeps) {
  expect_same_copies("rsync -aHAXS", rsync_all, "rsync");
}

TEST_P(CopyToolsTest, TarWithXattrsAndAclsKeepsEverythingExt4Keeps) {
  expect_same_copies("tar --xattrs --acls", tar_pipe, "tar");
}

TEST_P(CopyToolsTest, CopiesOutOfTheMountAreWhatCopiesOutOfExt4Are) {
  // The mount's copy read back by each tool, against ext4's copy read back.
  cp_a(src_, native_->path() + "/in");
  cp_a(src_, at("in"));
  for (const auto& [name, copy] :
       std::vector<std::pair<std::string, std::function<void(const std::string&, const std::string&)>>>{
           {"cp", cp_a}, {"rsync", rsync_all}, {"tar", tar_pipe}}) {
    copy(native_->path() + "/in", native_->path() + "/out-of-ext4-" + name);
    copy(at("in"), native_->path() + "/out-of-peregrine-" + name);
    const std::string diff = differences(snapshot(native_->path() + "/out-of-ext4-" + name),
                                         snapshot(native_->path() + "/out-of-peregrine-" + name));
    EXPECT_TRUE(diff.empty()) << name << " out of ext4 and out of peregrine differ:\n" << diff;
  }
}

PEREGRINE_FOR_CACHE_MODES(CopyToolsTest);

}  // namespace
}  // namespace peregrine::fstest
