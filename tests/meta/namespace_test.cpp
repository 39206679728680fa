// Namespace operations against expected POSIX results: create/lookup,
// link counts, unlink/rmdir errors, rename cases, setgid, symlinks,
// xattrs, readdir cookies, timestamps, unlink of open files, O_TMPFILE
// inodes, suid/sgid removal.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <map>
#include <set>

#include "meta_test_util.h"
#include "peregrine/meta/model_paths.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;

class NamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io = new_volume(g);
    md = mount_ok(*io, g);
    ASSERT_NE(md, nullptr);
  }
  Ino mk(Ino parent, const char* name, uint32_t mode = S_IFREG | 0644) {
    InodeAttr a;
    int rc =
        S_ISDIR(mode) ? md->mkdir(parent, name, mode & 07777, cred, &a) : md->mknod(parent, name, mode, 0, cred, &a);
    EXPECT_EQ(rc, 0) << name;
    return a.ino;
  }
  InodeAttr attr(Ino ino) {
    InodeAttr a;
    EXPECT_EQ(md->getattr(ino, &a), 0);
    return a;
  }
  Geometry g = small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  std::unique_ptr<Metadata> md;
  Cred cred{1000, 1000};
};

TEST_F(NamespaceTest, FreshRoot) {
  InodeAttr a = attr(kRootIno);
  EXPECT_EQ(a.mode, S_IFDIR | 0755u);
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.gid, 0u);
  EXPECT_EQ(a.nlink, 2u);
  EXPECT_TRUE(md->mount_report().fresh);
}

TEST_F(NamespaceTest, CreateLookupAndErrors) {
  Ino f = mk(kRootIno, "a");
  InodeAttr a;
  ASSERT_EQ(md->lookup(kRootIno, "a", &a), 0);
  EXPECT_EQ(a.ino, f);
  EXPECT_EQ(a.uid, 1000u);
  EXPECT_EQ(a.nlink, 1u);
  EXPECT_EQ(md->lookup(kRootIno, "b", &a), -ENOENT);
  EXPECT_EQ(md->mknod(kRootIno, "a", S_IFREG | 0644, 0, cred, &a), -EEXIST);
  EXPECT_EQ(md->mknod(f, "x", S_IFREG | 0644, 0, cred, &a), -ENOTDIR);
  EXPECT_EQ(md->mknod(kRootIno, std::string(256, 'n'), S_IFREG, 0, cred, &a), -ENAMETOOLONG);
  EXPECT_EQ(md->mknod(kRootIno, std::string(255, 'n'), S_IFREG, 0, cred, &a), 0);
  EXPECT_EQ(md->mknod(kRootIno, "d", S_IFDIR | 0755, 0, cred, &a), -EINVAL);
  EXPECT_EQ(md->mknod(kRootIno, "fifo", S_IFIFO | 0600, 0, cred, &a), 0);
  EXPECT_EQ(a.mode, S_IFIFO | 0600u);
  EXPECT_EQ(md->mknod(kRootIno, "dev", S_IFCHR | 0600, 0x0103, cred, &a), 0);
  EXPECT_EQ(a.rdev, 0x0103u);
  EXPECT_EQ(md->getattr(999, &a), -ENOENT);
}

TEST_F(NamespaceTest, InodeNumbersAreNeverReused) {
  Ino a = mk(kRootIno, "a");
  ASSERT_EQ(md->unlink(kRootIno, "a"), 0);
  Ino b = mk(kRootIno, "a");
  EXPECT_NE(a, b);
}

TEST_F(NamespaceTest, DirectoryLinkCountsAndRmdir) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  EXPECT_EQ(attr(kRootIno).nlink, 3u);
  EXPECT_EQ(attr(d).nlink, 2u);
  Ino sub = mk(d, "sub", S_IFDIR | 0755);
  EXPECT_EQ(attr(d).nlink, 3u);
  mk(d, "f");
  EXPECT_EQ(md->rmdir(kRootIno, "d"), -ENOTEMPTY);
  EXPECT_EQ(md->unlink(kRootIno, "d"), -EISDIR);
  EXPECT_EQ(md->rmdir(d, "f"), -ENOTDIR);
  ASSERT_EQ(md->unlink(d, "f"), 0);
  ASSERT_EQ(md->rmdir(d, "sub"), 0);
  InodeAttr gone;
  EXPECT_EQ(md->getattr(sub, &gone), -ENOENT);
  EXPECT_EQ(attr(d).nlink, 2u);
  ASSERT_EQ(md->rmdir(kRootIno, "d"), 0);
  EXPECT_EQ(attr(kRootIno).nlink, 2u);
}

TEST_F(NamespaceTest, HardLinks) {
  Ino f = mk(kRootIno, "f");
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  InodeAttr a;
  ASSERT_EQ(md->link(f, d, "g", &a), 0);
  EXPECT_EQ(a.nlink, 2u);
  EXPECT_EQ(md->link(f, d, "g", &a), -EEXIST);
  EXPECT_EQ(md->link(d, kRootIno, "dd", &a), -EPERM);
  ASSERT_EQ(md->unlink(kRootIno, "f"), 0);
  EXPECT_EQ(attr(f).nlink, 1u);
  ASSERT_EQ(md->unlink(d, "g"), 0);
  EXPECT_EQ(md->getattr(f, &a), -ENOENT);
}

// The paths `peregrine sync` opens files by: found from the root down,
// after renames, one of a hard-linked file's names (also when the name it
// was given last is gone), none for an unlinked file or an unknown number;
// and after a remount, from the checkpoint.
TEST_F(NamespaceTest, PathsOfInodesFollowRenamesAndSkipUnnamedOnes) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  Ino e = mk(d, "e", S_IFDIR | 0755);
  Ino f = mk(e, "f");
  Ino top = mk(kRootIno, "top");
  Ino linked = mk(d, "one");
  InodeAttr a;
  ASSERT_EQ(md->link(linked, e, "two", &a), 0);
  Ino gone = mk(d, "gone");
  ASSERT_EQ(md->open(gone), 0);
  ASSERT_EQ(md->unlink(d, "gone"), 0);
  ASSERT_EQ(md->rename(kRootIno, "d", kRootIno, "moved", 0), 0);

  std::map<Ino, std::string> paths = md->paths_of({kRootIno, d, e, f, top, linked, gone, 999999});
  EXPECT_EQ(paths[kRootIno], "");
  EXPECT_EQ(paths[d], "moved");
  EXPECT_EQ(paths[e], "moved/e");
  EXPECT_EQ(paths[f], "moved/e/f");
  EXPECT_EQ(paths[top], "top");
  EXPECT_EQ(paths[linked], "moved/e/two") << "the name it was given last";
  EXPECT_EQ(paths.count(gone), 0u);
  EXPECT_EQ(paths.count(999999), 0u);
  EXPECT_EQ(paths.size(), 6u);
  EXPECT_TRUE(md->paths_of({}).empty());
  // The name last given goes; the file is found by the walk, under its other.
  ASSERT_EQ(md->unlink(e, "two"), 0);
  EXPECT_EQ(md->paths_of({linked})[linked], "moved/one");
  // Renamed into another directory: found there.
  ASSERT_EQ(md->rename(d, "one", kRootIno, "back", 0), 0);
  EXPECT_EQ(md->paths_of({linked})[linked], "back");
  EXPECT_EQ(md->release(gone), 0);

  ASSERT_TRUE(md->unmount().is_ok());
  md = mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  paths = md->paths_of({f, top, linked, e});
  EXPECT_EQ(paths[f], "moved/e/f");
  EXPECT_EQ(paths[top], "top");
  EXPECT_EQ(paths[linked], "back");
  EXPECT_EQ(paths[e], "moved/e");
}

// Puts an inode into a model by hand, past apply(), for states apply()
// never makes.
void add_inode(Model& m, Ino ino, uint32_t mode, Ino parent, uint32_t nlink = 1) {
  auto in = std::make_unique<Inode>();
  in->attr.ino = ino;
  in->attr.mode = mode;
  in->attr.nlink = nlink;
  if (S_ISDIR(mode)) in->dir = std::make_unique<Directory>();
  in->parent = parent;
  m.inodes[ino] = std::move(in);
}

// A model whose directories' parents loop (never made by apply(), but a
// list for a user must not hang on it): no path, and the search ends.
TEST(ModelPathsTest, DirectoriesWhoseParentsLoopHaveNoPath) {
  Model m = Model::make_fresh(0);
  add_inode(m, 10, S_IFDIR | 0755, 11);
  add_inode(m, 11, S_IFDIR | 0755, 10);
  add_inode(m, 12, S_IFREG | 0644, 0);
  m.find(10)->dir->add("b", 11);
  m.find(11)->dir->add("a", 10);
  m.find(10)->dir->add("f", 12);
  EXPECT_TRUE(paths_of(m, {10, 11, 12}).empty());
}

// A hint is taken only where that directory names the file: hints of 0, of
// a missing inode, of a file, of a directory that does not hold it or of a
// removed one all end in the walk, which finds each file once.
TEST(ModelPathsTest, OnlyAHintThatNamesTheFileIsTaken) {
  Model m = Model::make_fresh(0);
  add_inode(m, 10, S_IFDIR | 0755, kRootIno);
  add_inode(m, 11, S_IFDIR | 0755, kRootIno);
  add_inode(m, 12, S_IFDIR | 0755, kRootIno, 0);  // removed while open
  m.find(kRootIno)->dir->add("a", 10);
  m.find(kRootIno)->dir->add("b", 11);
  const Ino good = 20, zero = 21, missing = 22, file = 23, other_dir = 24, removed_dir = 25;
  add_inode(m, good, S_IFREG | 0644, 10);
  add_inode(m, zero, S_IFREG | 0644, 0);
  add_inode(m, missing, S_IFREG | 0644, 999);
  add_inode(m, file, S_IFREG | 0644, good);
  add_inode(m, other_dir, S_IFREG | 0644, 11);
  add_inode(m, removed_dir, S_IFREG | 0644, 12);
  for (Ino ino : {good, zero, missing, file, other_dir, removed_dir}) {
    m.find(10)->dir->add("f" + std::to_string(ino), ino);
  }
  m.find(12)->dir->add("ghost", removed_dir);  // a removed directory's entry does not count
  std::map<Ino, std::string> paths = paths_of(m, {good, zero, missing, file, other_dir, removed_dir});
  ASSERT_EQ(paths.size(), 6u);
  for (const auto& [ino, path] : paths) EXPECT_EQ(path, "a/f" + std::to_string(ino));
}

TEST_F(NamespaceTest, RenameReplacesFileAndFreesIt) {
  Ino a = mk(kRootIno, "a");
  Ino b = mk(kRootIno, "b");
  ASSERT_EQ(md->rename(kRootIno, "a", kRootIno, "b", 0), 0);
  InodeAttr x;
  ASSERT_EQ(md->lookup(kRootIno, "b", &x), 0);
  EXPECT_EQ(x.ino, a);
  EXPECT_EQ(md->lookup(kRootIno, "a", &x), -ENOENT);
  EXPECT_EQ(md->getattr(b, &x), -ENOENT);
  EXPECT_EQ(md->rename(kRootIno, "zz", kRootIno, "b", 0), -ENOENT);
}

TEST_F(NamespaceTest, RenameDirectoryRules) {
  Ino d1 = mk(kRootIno, "d1", S_IFDIR | 0755);
  Ino d2 = mk(kRootIno, "d2", S_IFDIR | 0755);
  Ino e = mk(kRootIno, "empty", S_IFDIR | 0755);
  mk(kRootIno, "f");
  Ino inner = mk(d1, "inner", S_IFDIR | 0755);
  mk(d2, "x");
  EXPECT_EQ(md->rename(kRootIno, "d1", kRootIno, "d2", 0), -ENOTEMPTY);
  EXPECT_EQ(md->rename(kRootIno, "d1", kRootIno, "f", 0), -ENOTDIR);
  EXPECT_EQ(md->rename(kRootIno, "f", kRootIno, "empty", 0), -EISDIR);
  EXPECT_EQ(md->rename(kRootIno, "d1", inner, "loop", 0), -EINVAL);
  EXPECT_EQ(md->rename(kRootIno, "d1", d1, "self", 0), -EINVAL);
  // Directory over an empty directory, across parents: link counts follow.
  const uint32_t root_links = attr(kRootIno).nlink;  // 2 + d1 d2 empty
  ASSERT_EQ(md->rename(d1, "inner", kRootIno, "empty", 0), 0);
  InodeAttr x;
  EXPECT_EQ(md->getattr(e, &x), -ENOENT);
  EXPECT_EQ(attr(d1).nlink, 2u);
  EXPECT_EQ(attr(kRootIno).nlink, root_links);  // lost "empty", gained "inner"
  ASSERT_EQ(md->lookup(kRootIno, "empty", &x), 0);
  EXPECT_EQ(x.ino, inner);
  // Moving a directory re-parents it: moving it back under d1 is fine now.
  ASSERT_EQ(md->rename(kRootIno, "empty", d1, "back", 0), 0);
  EXPECT_EQ(attr(d1).nlink, 3u);
  EXPECT_EQ(attr(kRootIno).nlink, root_links - 1);
}

TEST_F(NamespaceTest, RenameNoreplaceAndExchange) {
  Ino a = mk(kRootIno, "a");
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  Ino sub = mk(kRootIno, "sub", S_IFDIR | 0755);
  EXPECT_EQ(md->rename(kRootIno, "a", kRootIno, "d", RENAME_NOREPLACE), -EEXIST);
  EXPECT_EQ(md->rename(kRootIno, "a", kRootIno, "nope", RENAME_EXCHANGE), -ENOENT);
  EXPECT_EQ(md->rename(kRootIno, "a", kRootIno, "d", RENAME_EXCHANGE | RENAME_NOREPLACE), -EINVAL);
  EXPECT_EQ(md->rename(kRootIno, "a", kRootIno, "d", 0x80), -EINVAL);
  Ino b = mk(d, "b");
  // Exchange a file in root with a directory... in d: d's subtree check.
  EXPECT_EQ(md->rename(kRootIno, "d", d, "b", RENAME_EXCHANGE), -EINVAL);
  // Exchange file a (in root) with dir sub's place: a <-> sub, same parent.
  ASSERT_EQ(md->rename(kRootIno, "a", kRootIno, "sub", RENAME_EXCHANGE), 0);
  InodeAttr x;
  ASSERT_EQ(md->lookup(kRootIno, "a", &x), 0);
  EXPECT_EQ(x.ino, sub);
  ASSERT_EQ(md->lookup(kRootIno, "sub", &x), 0);
  EXPECT_EQ(x.ino, a);
  // Across parents: dir "a" (=sub) <-> file d/b moves one ".." link.
  const uint32_t root_links = attr(kRootIno).nlink;
  ASSERT_EQ(md->rename(kRootIno, "a", d, "b", RENAME_EXCHANGE), 0);
  EXPECT_EQ(attr(kRootIno).nlink, root_links - 1);
  EXPECT_EQ(attr(d).nlink, 3u);
  ASSERT_EQ(md->lookup(d, "b", &x), 0);
  EXPECT_EQ(x.ino, sub);
  ASSERT_EQ(md->lookup(kRootIno, "a", &x), 0);
  EXPECT_EQ(x.ino, b);
  ASSERT_EQ(md->rename(d, "b", kRootIno, "new", RENAME_NOREPLACE), 0);
}

// RENAME_WHITEOUT (overlayfs' upper layer): the old name becomes a 0:0
// character device with mode 0, owned by the caller (the group of a setgid
// parent), and the renamed inode is at the new name; not with EXCHANGE.
TEST_F(NamespaceTest, RenameWhiteoutLeavesACharacterDeviceZeroZeroAtTheOldName) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 02777);
  Ino f = mk(d, "f");
  mk(d, "g");
  EXPECT_EQ(md->rename(d, "f", d, "g", RENAME_WHITEOUT | RENAME_EXCHANGE), -EINVAL);
  EXPECT_EQ(md->rename(d, "f", d, "g", RENAME_WHITEOUT | RENAME_NOREPLACE), -EEXIST);
  const Cred who{1000, 100};
  ASSERT_EQ(md->rename(d, "f", d, "h", RENAME_WHITEOUT | RENAME_NOREPLACE, who), 0);
  InodeAttr x;
  ASSERT_EQ(md->lookup(d, "h", &x), 0);
  EXPECT_EQ(x.ino, f);
  InodeAttr w;
  ASSERT_EQ(md->lookup(d, "f", &w), 0);
  EXPECT_NE(w.ino, f);
  EXPECT_EQ(w.mode, static_cast<uint32_t>(S_IFCHR));
  EXPECT_EQ(w.rdev, 0u);
  EXPECT_EQ(w.nlink, 1u);
  EXPECT_EQ(w.uid, 1000u);
  EXPECT_EQ(w.gid, attr(d).gid) << "a setgid parent's group";
  // Over an existing target: the target goes, the whiteout comes.
  ASSERT_EQ(md->rename(d, "h", d, "g", RENAME_WHITEOUT, who), 0);
  ASSERT_EQ(md->lookup(d, "h", &w), 0);
  EXPECT_EQ(w.mode, static_cast<uint32_t>(S_IFCHR));
  ASSERT_EQ(md->lookup(d, "g", &x), 0);
  EXPECT_EQ(x.ino, f);
}

TEST_F(NamespaceTest, RenameOfTwoLinksToSameInodeDoesNothing) {
  Ino f = mk(kRootIno, "f");
  InodeAttr a;
  ASSERT_EQ(md->link(f, kRootIno, "g", &a), 0);
  ASSERT_EQ(md->rename(kRootIno, "f", kRootIno, "g", 0), 0);
  EXPECT_EQ(md->lookup(kRootIno, "f", &a), 0);
  EXPECT_EQ(a.nlink, 2u);
}

TEST_F(NamespaceTest, SetgidDirectoryRules) {
  Cred root{0, 0};
  InodeAttr d;
  ASSERT_EQ(md->mkdir(kRootIno, "shared", 02775, root, &d), 0);
  SetAttrIn s;
  s.valid = SetAttrIn::kGid;
  s.gid = 500;
  ASSERT_EQ(md->setattr(d.ino, s, &d), 0);
  InodeAttr f, sub;
  ASSERT_EQ(md->mknod(d.ino, "f", S_IFREG | 0644, 0, cred, &f), 0);
  EXPECT_EQ(f.gid, 500u);
  EXPECT_EQ(f.uid, 1000u);
  EXPECT_EQ(f.mode & S_ISGID, 0u);
  ASSERT_EQ(md->mkdir(d.ino, "sub", 0755, cred, &sub), 0);
  EXPECT_EQ(sub.gid, 500u);
  EXPECT_NE(sub.mode & S_ISGID, 0u);
  InodeAttr plain;
  ASSERT_EQ(md->mknod(kRootIno, "p", S_IFREG | 0644, 0, cred, &plain), 0);
  EXPECT_EQ(plain.gid, 1000u);
}

TEST_F(NamespaceTest, Symlinks) {
  InodeAttr a;
  ASSERT_EQ(md->symlink(kRootIno, "l", "../target/x", cred, &a), 0);
  EXPECT_EQ(a.mode, S_IFLNK | 0777u);
  EXPECT_EQ(a.size, 11u);
  std::string t;
  ASSERT_EQ(md->readlink(a.ino, &t), 0);
  EXPECT_EQ(t, "../target/x");
  EXPECT_EQ(md->readlink(kRootIno, &t), -EINVAL);
  EXPECT_EQ(md->symlink(kRootIno, "e", "", cred, &a), -ENOENT);
  EXPECT_EQ(md->symlink(kRootIno, "long", std::string(4096, 'x'), cred, &a), -ENAMETOOLONG);
  EXPECT_EQ(md->symlink(kRootIno, "max", std::string(4095, 'x'), cred, &a), 0);
}

TEST_F(NamespaceTest, Xattrs) {
  Ino f = mk(kRootIno, "f");
  std::string v;
  EXPECT_EQ(md->getxattr(f, "user.a", &v), -ENODATA);
  EXPECT_EQ(md->setxattr(f, "user.a", "1", XATTR_REPLACE), -ENODATA);
  ASSERT_EQ(md->setxattr(f, "user.a", "1", XATTR_CREATE), 0);
  EXPECT_EQ(md->setxattr(f, "user.a", "2", XATTR_CREATE), -EEXIST);
  ASSERT_EQ(md->setxattr(f, "user.a", "2", XATTR_REPLACE), 0);
  ASSERT_EQ(md->setxattr(f, "user.b", std::string(1000, '\0'), 0), 0);
  ASSERT_EQ(md->getxattr(f, "user.a", &v), 0);
  EXPECT_EQ(v, "2");
  ASSERT_EQ(md->getxattr(f, "user.b", &v), 0);
  EXPECT_EQ(v, std::string(1000, '\0'));
  std::vector<std::string> names;
  ASSERT_EQ(md->listxattr(f, &names), 0);
  EXPECT_EQ(names, (std::vector<std::string>{"user.a", "user.b"}));
  EXPECT_EQ(md->setxattr(f, std::string(256, 'x'), "v", 0), -ERANGE);
  EXPECT_EQ(md->setxattr(f, "user.big", std::string(65537, 'v'), 0), -E2BIG);
  ASSERT_EQ(md->removexattr(f, "user.a"), 0);
  EXPECT_EQ(md->removexattr(f, "user.a"), -ENODATA);
}

TEST_F(NamespaceTest, ReaddirCookiesResumeAndStayStable) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  std::set<std::string> expect;
  for (int i = 0; i < 1000; ++i) {
    std::string n = test::cat("f", i);
    mk(d, n.c_str());
    expect.insert(n);
  }
  std::set<std::string> seen;
  uint64_t cookie = 0;
  bool removed = false;
  for (;;) {
    std::vector<DirEntry> page;
    ASSERT_EQ(md->readdir(d, cookie, 100, &page), 0);
    if (page.empty()) break;
    EXPECT_LE(page.size(), 100u);
    for (const auto& e : page) {
      EXPECT_GT(e.cookie, cookie);
      EXPECT_TRUE(seen.insert(e.name).second) << "duplicate " << e.name;
      EXPECT_EQ(e.type, static_cast<uint32_t>(S_IFREG));
      cookie = e.cookie;
    }
    if (!removed) {  // entries removed mid-listing do not disturb it
      ASSERT_EQ(md->unlink(d, "f999"), 0);
      expect.erase("f999");
      removed = true;
    }
  }
  EXPECT_EQ(seen, expect);
  std::vector<DirEntry> none;
  EXPECT_EQ(md->readdir(d + 100000, 0, 10, &none), -ENOENT);
  Ino f = mk(kRootIno, "plain");
  EXPECT_EQ(md->readdir(f, 0, 10, &none), -ENOTDIR);
}

// A pass bounded by listing_end() meets an entry renamed away and back (or
// added) after it began no more, and ends; the next pass sees it.
TEST_F(NamespaceTest, APassEndsWhereTheEntriesStoodWhenItBegan) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  Ino away = mk(kRootIno, "away", S_IFDIR | 0755);
  for (int i = 0; i < 10; ++i) mk(d, test::cat("f", i).c_str());
  uint64_t end = 0;
  ASSERT_EQ(md->listing_end(d, &end), 0);
  std::vector<std::string> seen;
  uint64_t cookie = 0;
  for (;;) {
    std::vector<DirEntry> page;
    ASSERT_EQ(md->readdir(d, cookie, 3, &page, end), 0);
    if (page.empty()) break;
    for (const auto& e : page) {
      seen.push_back(e.name);
      cookie = e.cookie;
      // Away and back: the entry gets a new cookie, past the pass's end.
      ASSERT_EQ(md->rename(d, e.name, away, e.name, 0), 0);
      ASSERT_EQ(md->rename(away, e.name, d, e.name, 0), 0);
    }
    ASSERT_LT(seen.size(), 100u) << "the pass does not end";
  }
  EXPECT_EQ(seen.size(), 10u);
  std::vector<DirEntry> all;
  ASSERT_EQ(md->readdir(d, 0, 100, &all), 0);
  EXPECT_EQ(all.size(), 10u) << "a new pass sees every entry";
  EXPECT_EQ(md->listing_end(mk(kRootIno, "plain"), &end), -ENOTDIR);
}

TEST_F(NamespaceTest, ReaddirPlusCarriesAttributes) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  Ino f = mk(d, "f");
  Ino sub = mk(d, "sub", S_IFDIR | 0700);
  std::vector<std::pair<DirEntry, InodeAttr>> out;
  ASSERT_EQ(md->readdir_plus(d, 0, 10, &out), 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first.name, "f");
  EXPECT_EQ(out[0].second, attr(f));
  EXPECT_EQ(out[1].second.mode, S_IFDIR | 0700u);
  EXPECT_EQ(out[1].second.ino, sub);
  out.clear();
  ASSERT_EQ(md->readdir_plus(d, kFirstDirCookie, 10, &out), 0);  // after "f"
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first.name, "sub");
}

TEST_F(NamespaceTest, TimestampsFollowPosix) {
  const InodeAttr r0 = attr(kRootIno);
  Ino f = mk(kRootIno, "f");
  const InodeAttr r1 = attr(kRootIno);
  const InodeAttr f1 = attr(f);
  EXPECT_GT(r1.mtime_ns, r0.mtime_ns);
  EXPECT_GT(r1.ctime_ns, r0.ctime_ns);
  EXPECT_EQ(f1.mtime_ns, f1.ctime_ns);
  InodeAttr a;
  ASSERT_EQ(md->link(f, kRootIno, "g", &a), 0);
  EXPECT_GT(a.ctime_ns, f1.ctime_ns);
  EXPECT_EQ(a.mtime_ns, f1.mtime_ns);  // link changes ctime only
  SetAttrIn s;
  s.valid = SetAttrIn::kMode;
  s.mode = 0600;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  EXPECT_EQ(a.mode, S_IFREG | 0600u);
  EXPECT_EQ(a.mtime_ns, f1.mtime_ns);
  s.valid = SetAttrIn::kAtime | SetAttrIn::kMtime;
  s.atime_ns = 5;
  s.mtime_ns = 7;
  ASSERT_EQ(md->setattr(f, s, &a), 0);
  EXPECT_EQ(a.atime_ns, 5);
  EXPECT_EQ(a.mtime_ns, 7);
  EXPECT_GT(a.ctime_ns, f1.ctime_ns);
  const InodeAttr before = attr(f);
  ASSERT_EQ(md->setxattr(f, "user.x", "y", 0), 0);
  EXPECT_GT(attr(f).ctime_ns, before.ctime_ns);
  EXPECT_EQ(attr(f).mtime_ns, before.mtime_ns);
}

TEST_F(NamespaceTest, UnlinkOfOpenFileKeepsItUntilLastRelease) {
  InodeAttr a;
  ASSERT_EQ(md->create(kRootIno, "f", 0644, cred, &a), 0);  // open #1
  ASSERT_EQ(md->open(a.ino), 0);                            // open #2
  ASSERT_EQ(md->unlink(kRootIno, "f"), 0);
  InodeAttr b;
  ASSERT_EQ(md->getattr(a.ino, &b), 0);
  EXPECT_EQ(b.nlink, 0u);
  EXPECT_NE(md->dump().find(test::cat("orphan ", a.ino)), std::string::npos);
  EXPECT_EQ(md->link(a.ino, kRootIno, "again", &b), -ENOENT);
  ASSERT_EQ(md->release(a.ino), 0);
  EXPECT_EQ(md->getattr(a.ino, &b), 0);
  ASSERT_EQ(md->release(a.ino), 0);
  EXPECT_EQ(md->getattr(a.ino, &b), -ENOENT);
  EXPECT_EQ(md->dump().find("orphan"), std::string::npos);
}

// A directory open while rmdir or a rename over it takes its name is kept
// like an open file: no links, on the orphan list until its last release,
// and freed by the next mount after a crash.
TEST_F(NamespaceTest, OpenDirectoryLosingItsNameIsKeptUntilLastRelease) {
  InodeAttr gone, replaced, src;
  ASSERT_EQ(md->mkdir(kRootIno, "gone", 0755, cred, &gone), 0);
  ASSERT_EQ(md->mkdir(kRootIno, "d2", 0755, cred, &replaced), 0);
  ASSERT_EQ(md->mkdir(kRootIno, "d1", 0755, cred, &src), 0);
  ASSERT_EQ(md->open(gone.ino), 0);
  ASSERT_EQ(md->open(replaced.ino), 0);
  ASSERT_EQ(md->rmdir(kRootIno, "gone"), 0);
  ASSERT_EQ(md->rename(kRootIno, "d1", kRootIno, "d2", 0), 0);
  for (Ino ino : {gone.ino, replaced.ino}) {
    InodeAttr a;
    ASSERT_EQ(md->getattr(ino, &a), 0) << ino;
    EXPECT_EQ(a.nlink, 0u) << ino;
    EXPECT_NE(md->dump().find(test::cat("orphan ", ino)), std::string::npos) << ino;
  }
  InodeAttr x;
  EXPECT_EQ(md->mkdir(gone.ino, "inside", 0755, cred, &x), -ENOENT) << "a removed directory takes no entries";
  EXPECT_EQ(attr(kRootIno).nlink, 3u) << "root: itself, its '.', and d2's '..'";
  ASSERT_EQ(md->release(gone.ino), 0);
  EXPECT_EQ(md->getattr(gone.ino, &x), -ENOENT);
  ASSERT_EQ(md->sync(), 0);
  // "Crash" with the replaced directory still open: the next mount frees it.
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  md.reset();
  auto md2 = mount_ok(*img, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->mount_report().orphans_freed, 1u);
  EXPECT_EQ(md2->getattr(replaced.ino, &x), -ENOENT);
  EXPECT_EQ(md2->dump().find("orphan"), std::string::npos);
}

TEST_F(NamespaceTest, OrphanIsFreedAtMountAfterCrash) {
  InodeAttr a;
  ASSERT_EQ(md->create(kRootIno, "f", 0644, cred, &a), 0);
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(a.ino, 0, 1 << 20, &w), 0);
  ASSERT_EQ(md->complete_write(a.ino, w, 1 << 20), 0);
  ASSERT_EQ(md->unlink(kRootIno, "f"), 0);
  ASSERT_EQ(md->sync(), 0);
  StatFs before;
  ASSERT_EQ(md->statfs(&before), 0);
  // "Crash" with the file still open: the next mount frees it.
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  md.reset();
  auto md2 = mount_ok(*img, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->mount_report().orphans_freed, 1u);
  InodeAttr b;
  EXPECT_EQ(md2->getattr(a.ino, &b), -ENOENT);
  StatFs after;
  ASSERT_EQ(md2->statfs(&after), 0);
  EXPECT_EQ(after.free_blocks, after.total_blocks);
}

TEST_F(NamespaceTest, TmpfileIsAnOpenOrphanUntilLinked) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 02775);
  const InodeAttr dir_before = attr(d);
  InodeAttr a;
  ASSERT_EQ(md->tmpfile(d, 0640, Cred{1000, 2000}, &a), 0);
  EXPECT_EQ(a.nlink, 0u);
  EXPECT_EQ(a.mode, S_IFREG | 0640u);
  EXPECT_EQ(a.uid, 1000u);
  EXPECT_EQ(a.gid, dir_before.gid) << "the group of a setgid directory, as for create()";
  EXPECT_NE(md->dump().find(test::cat("orphan ", a.ino)), std::string::npos);
  std::vector<DirEntry> entries;
  ASSERT_EQ(md->readdir(d, 0, 100, &entries), 0);
  EXPECT_TRUE(entries.empty());
  EXPECT_EQ(attr(d).mtime_ns, dir_before.mtime_ns) << "no name was added";

  InodeAttr b;
  ASSERT_EQ(md->link(a.ino, d, "named", &b), 0);
  EXPECT_EQ(b.nlink, 1u);
  EXPECT_EQ(md->dump().find("orphan"), std::string::npos);
  ASSERT_EQ(md->release(a.ino), 0);
  ASSERT_EQ(md->lookup(d, "named", &b), 0);
  EXPECT_EQ(b.ino, a.ino);
  // Once named, it is an ordinary file: unlinked while open, it cannot be
  // linked again.
  ASSERT_EQ(md->open(a.ino), 0);
  ASSERT_EQ(md->unlink(d, "named"), 0);
  EXPECT_EQ(md->link(a.ino, d, "again", &b), -ENOENT);
  ASSERT_EQ(md->release(a.ino), 0);
  EXPECT_EQ(md->getattr(a.ino, &b), -ENOENT);
}

TEST_F(NamespaceTest, TmpfileNeverLinkedIsFreedAtReleaseOrAtMountAfterCrash) {
  InodeAttr a;
  ASSERT_EQ(md->tmpfile(kRootIno, 0600, cred, &a), 0);
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(a.ino, 0, 1 << 20, &w), 0);
  ASSERT_EQ(md->complete_write(a.ino, w, 1 << 20), 0);
  ASSERT_EQ(md->release(a.ino), 0);
  InodeAttr b;
  EXPECT_EQ(md->getattr(a.ino, &b), -ENOENT);
  StatFs s;
  ASSERT_EQ(md->statfs(&s), 0);
  EXPECT_EQ(s.free_blocks, s.total_blocks);

  ASSERT_EQ(md->tmpfile(kRootIno, 0600, cred, &a), 0);
  w.clear();
  ASSERT_EQ(md->prepare_write(a.ino, 0, 1 << 20, &w), 0);
  ASSERT_EQ(md->complete_write(a.ino, w, 1 << 20), 0);
  ASSERT_EQ(md->fsync(a.ino), 0);
  // "Crash" with the file open: it was never named, so nothing of it stays.
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  md.reset();
  auto md2 = mount_ok(*img, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->mount_report().orphans_freed, 1u);
  EXPECT_EQ(md2->getattr(a.ino, &b), -ENOENT);
  ASSERT_EQ(md2->statfs(&s), 0);
  EXPECT_EQ(s.free_blocks, s.total_blocks);
}

TEST_F(NamespaceTest, AWriteRemovesFileCapabilitiesOnly) {
  Ino f = mk(kRootIno, "f");
  ASSERT_EQ(md->setxattr(f, "security.capability", std::string(20, '\1'), 0), 0);
  ASSERT_EQ(md->setxattr(f, "user.kept", "v", 0), 0);
  std::vector<WriteRange> w;
  ASSERT_EQ(md->prepare_write(f, 0, 4096, &w), 0);
  std::string v;
  EXPECT_EQ(md->getxattr(f, "security.capability", &v), -ENODATA);
  EXPECT_EQ(md->getxattr(f, "user.kept", &v), 0);
}

TEST_F(NamespaceTest, SetattrClearModeTakesOnlySuidAndSgid) {
  Ino f = mk(kRootIno, "f", S_IFREG | 06755);
  SetAttrIn in;
  in.clear_mode = S_ISUID | 0755;  // only the special bits count
  InodeAttr a;
  ASSERT_EQ(md->setattr(f, in, &a), 0);
  EXPECT_EQ(a.mode, S_IFREG | 02755u);
  in.valid = SetAttrIn::kMode;  // with a chmod: cleared from the new mode
  in.mode = 06777;
  in.clear_mode = S_ISGID;
  ASSERT_EQ(md->setattr(f, in, &a), 0);
  EXPECT_EQ(a.mode, S_IFREG | 04777u);
}

TEST_F(NamespaceTest, StatePersistsAcrossUnmount) {
  Ino d = mk(kRootIno, "d", S_IFDIR | 0755);
  mk(d, "f");
  InodeAttr a;
  ASSERT_EQ(md->symlink(d, "l", "f", cred, &a), 0);
  ASSERT_EQ(md->setxattr(d, "user.k", "v", 0), 0);
  const std::string before = md->dump();
  ASSERT_TRUE(md->unmount().is_ok());
  md.reset();
  auto md2 = mount_ok(*io, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->dump(), before);
  EXPECT_EQ(md2->mount_report().replayed_records, 0u);
  // Cookies continue after a remount (no reuse).
  ASSERT_EQ(md2->mknod(d, "g", S_IFREG | 0644, 0, cred, &a), 0);
  std::vector<DirEntry> all;
  ASSERT_EQ(md2->readdir(d, 0, 100, &all), 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.back().name, "g");
}

TEST_F(NamespaceTest, StatfsReflectsAllocator) {
  StatFs s;
  ASSERT_EQ(md->statfs(&s), 0);
  EXPECT_EQ(s.total_blocks, g.data_size / 4096);
  EXPECT_EQ(s.free_blocks, s.total_blocks);
  // f_files is capacity (in use + free), as statvfs defines it: only the
  // root is in use, and the checkpoint slot has room for many more.
  EXPECT_EQ(s.files - s.files_free, 1u);
  EXPECT_GT(s.files_free, 1000u);
  EXPECT_EQ(s.name_max, 255u);
  InodeAttr a;
  ASSERT_EQ(md->mknod(kRootIno, "f", S_IFREG | 0644, 0, Cred{}, &a), 0);
  StatFs after;
  ASSERT_EQ(md->statfs(&after), 0);
  EXPECT_EQ(after.files - after.files_free, 2u);
  EXPECT_LE(after.files_free, s.files_free);
}

// fsync_commit_is_short (a ring thread runs such an fsync itself): true
// while the records pending fit one small batch, false once they outgrow
// it, and true again after they are committed.
TEST_F(NamespaceTest, AnFsyncCommitIsShortUntilRecordsPileUp) {
  EXPECT_TRUE(md->fsync_commit_is_short());
  mk(kRootIno, "one");
  EXPECT_TRUE(md->fsync_commit_is_short());
  int made = 0;
  while (md->fsync_commit_is_short() && made < 5000)
    mk(kRootIno, test::cat("a-rather-long-name-for-a-file-", made++).c_str());
  EXPECT_FALSE(md->fsync_commit_is_short()) << made << " creates";
  // Each create's records take some hundreds of bytes: 64 KiB is some
  // hundreds of creates, where the checkpoint would not be due for
  // thousands more.
  EXPECT_GT(made, 10) << "a few records already counted as more than a small batch";
  EXPECT_LT(made, 1000) << "the records outgrew a small batch long before the flip";
  ASSERT_EQ(md->sync(), 0);
  EXPECT_TRUE(md->fsync_commit_is_short());
}

// A size grown by truncate or fallocate may cover a last block whose tail
// a shrink zeroed in place after its record: the batch that carries the
// grown size flushes first, so those zeros are durable before it (as for
// a write that grows the file). A shrink needs no such flush.
TEST_F(NamespaceTest, ABatchThatGrowsASizeFlushesBeforeItIsWritten) {
  const Ino f = mk(kRootIno, "f");
  ASSERT_EQ(md->sync(), 0);
  SetAttrIn in;
  in.valid = SetAttrIn::kSize;
  InodeAttr out;
  auto flushes_of_sync = [&] {
    const uint64_t before = io->flush_count();
    EXPECT_EQ(md->sync(), 0);
    return io->flush_count() - before;
  };
  in.size = 3 * 4096 + 100;
  ASSERT_EQ(md->setattr(f, in, &out), 0);
  EXPECT_EQ(flushes_of_sync(), 2u) << "a truncate that grows the file: a flush before the batch and after it";
  in.size = 4096 + 10;
  ASSERT_EQ(md->setattr(f, in, &out), 0);
  EXPECT_EQ(flushes_of_sync(), 1u) << "a shrink: the batch's own flush only";
  ASSERT_EQ(md->fallocate(f, 0, 0, 8 * 4096), 0);
  EXPECT_EQ(flushes_of_sync(), 2u) << "a fallocate that grows the file";
  ASSERT_EQ(md->fallocate(f, FALLOC_FL_KEEP_SIZE, 8 * 4096, 4 * 4096), 0);
  EXPECT_EQ(flushes_of_sync(), 1u) << "a fallocate that keeps the size";
}

// ... and false when the commit would end in a checkpoint: with the
// journal checkpointed once 1% of its ring is used, a few batches in.
TEST(NamespaceCheckpointTest, AnFsyncCommitIsNotShortWhenACheckpointIsDue) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  Options o = test::test_options();
  o.checkpoint_percent = 1;
  auto md = mount_ok(*io, g, o);
  ASSERT_NE(md, nullptr);
  const Cred cred{1000, 1000};
  int batches = 0;
  bool due = false;
  while (!due && batches < 1000) {
    InodeAttr a;
    ASSERT_EQ(md->mknod(kRootIno, test::cat("f", batches).c_str(), S_IFREG | 0644, 0, cred, &a), 0);
    due = !md->fsync_commit_is_short();
    if (!due) {
      ASSERT_EQ(md->fsync(a.ino), 0);
      ++batches;
    }
  }
  EXPECT_TRUE(due) << "no checkpoint due after " << batches << " batches";
  ASSERT_EQ(md->sync(), 0);  // commits with the checkpoint
  EXPECT_TRUE(md->fsync_commit_is_short());
}

}  // namespace
}  // namespace peregrine::meta
