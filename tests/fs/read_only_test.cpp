// Read-only mounts (-o ro): the kernel and the daemon refuse every change
// with EROFS, data reads back byte for byte, and the members are not
// written at all — not on a clean volume, not when a kill -9 left a
// journal to replay (applied in memory only), not with norecovery (not
// applied), and they may even be read-only files.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

std::vector<uint64_t> member_hashes(const Volume& v) { return hash_files(v.members()); }

bool has_option(const std::string& options, const std::string& opt) {
  return ("," + options + ",").find("," + opt + ",") != std::string::npos;
}

void expect_clean_exit(Volume& v) {
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
}

void expect_fsck_clean(const Volume& v) {
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << "fsck -n: " << r.describe();
  v.wait_members_released();
}

bool fsync_path(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  return fd.ok() && ::fsync(fd.get()) == 0;
}

// Every kind of change, through the mount: each must fail with EROFS.
void expect_every_change_refused(const Volume& v, const std::string& existing) {
  errno = 0;
  EXPECT_EQ(outcome(::open(v.at(existing).c_str(), O_WRONLY)), (Outcome{-1, EROFS})) << "open O_WRONLY";
  EXPECT_EQ(outcome(::open(v.at(existing).c_str(), O_RDWR)), (Outcome{-1, EROFS})) << "open O_RDWR";
  EXPECT_EQ(outcome(::open(v.at("new").c_str(), O_WRONLY | O_CREAT, 0644)), (Outcome{-1, EROFS})) << "create";
  EXPECT_EQ(outcome(::unlink(v.at(existing).c_str())), (Outcome{-1, EROFS})) << "unlink";
  EXPECT_EQ(outcome(::mkdir(v.at("newdir").c_str(), 0755)), (Outcome{-1, EROFS})) << "mkdir";
  EXPECT_EQ(outcome(::rename(v.at(existing).c_str(), v.at("renamed").c_str())), (Outcome{-1, EROFS})) << "rename";
  EXPECT_EQ(outcome(::symlink("x", v.at("link").c_str())), (Outcome{-1, EROFS})) << "symlink";
  EXPECT_EQ(outcome(::link(v.at(existing).c_str(), v.at("hard").c_str())), (Outcome{-1, EROFS})) << "link";
  EXPECT_EQ(outcome(::chmod(v.at(existing).c_str(), 0600)), (Outcome{-1, EROFS})) << "chmod";
  EXPECT_EQ(outcome(::truncate(v.at(existing).c_str(), 0)), (Outcome{-1, EROFS})) << "truncate";
  EXPECT_EQ(outcome(::setxattr(v.at(existing).c_str(), "user.x", "1", 1, 0)), (Outcome{-1, EROFS})) << "setxattr";
  EXPECT_EQ(outcome(::removexattr(v.at(existing).c_str(), "user.note")), (Outcome{-1, EROFS})) << "removexattr";
}

using ReadOnlyMountTest = FreshVolumeTest;

TEST_F(ReadOnlyMountTest, RefusesEveryChangeServesTheDataAndWritesNothing) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  const std::string a = pattern(3 << 20, 1), b = pattern(123457, 2);
  ASSERT_TRUE(write_file(v.at("a"), a));
  ASSERT_EQ(::mkdir(v.at("d").c_str(), 0750), 0);
  ASSERT_TRUE(write_file(v.at("d/b"), b));
  ASSERT_EQ(::setxattr(v.at("a").c_str(), "user.note", "kept", 4, 0), 0);
  const Tree tree = snapshot_tree(v.mountpoint(), true);
  expect_clean_exit(v);
  const std::vector<uint64_t> before = member_hashes(v);

  RunResult r = v.mount({"-o", "ro"});
  ASSERT_EQ(r.code, 0) << r.describe();
  auto m = mount_at(v.mountpoint());
  ASSERT_TRUE(m);
  EXPECT_TRUE(has_option(m->options, "ro")) << "kernel mount options: " << m->options;
  EXPECT_TRUE(read_file(v.at("a")) == a) << "'a' differs on the read-only mount";
  EXPECT_TRUE(read_file(v.at("d/b")) == b) << "'d/b' differs on the read-only mount";
  EXPECT_EQ(snapshot_tree(v.mountpoint(), true), tree)
      << describe_tree_difference(tree, snapshot_tree(v.mountpoint(), true));
  expect_every_change_refused(v, "a");
  EXPECT_EQ(outcome(::open(v.at("d/b").c_str(), O_RDONLY | O_TRUNC)), (Outcome{-1, EROFS})) << "O_TRUNC";
  EXPECT_TRUE(fsync_path(v.at("a"))) << "fsync of a read-only file: " << std::strerror(errno);
  EXPECT_TRUE(read_file(v.at("a")) == a);
  expect_clean_exit(v);
  EXPECT_EQ(member_hashes(v), before) << "the read-only mount wrote to its members";

  // A read-write mount afterwards finds everything as it was.
  ASSERT_EQ(v.mount().code, 0);
  EXPECT_EQ(snapshot_tree(v.mountpoint(), true), tree);
  expect_clean_exit(v);
  expect_fsck_clean(v);
}

// The daemon refuses changes on its own: if the kernel mount is made
// read-write behind its back (MS_REMOUNT), writes still get EROFS.
TEST_F(ReadOnlyMountTest, TheDaemonRefusesChangesEvenWhenTheKernelLetsThemThrough) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  ASSERT_TRUE(write_file(v.at("a"), pattern(10000, 3)));
  ASSERT_EQ(::setxattr(v.at("a").c_str(), "user.note", "kept", 4, 0), 0);
  expect_clean_exit(v);
  const std::vector<uint64_t> before = member_hashes(v);

  ASSERT_EQ(v.mount({"-o", "ro"}).code, 0);
  ASSERT_EQ(::mount(nullptr, v.mountpoint().c_str(), nullptr, MS_REMOUNT, nullptr), 0)
      << "remount rw: " << std::strerror(errno);
  auto m = mount_at(v.mountpoint());
  ASSERT_TRUE(m);
  ASSERT_FALSE(has_option(m->options, "ro")) << "the kernel kept the mount read-only: " << m->options;
  expect_every_change_refused(v, "a");
  expect_clean_exit(v);
  EXPECT_EQ(member_hashes(v), before) << "the read-only daemon wrote to its members";
}

// kill -9 after fsync'd changes leaves a journal to replay: a read-only
// mount shows the fsync'd data (replayed in memory) and says so, changes
// nothing; the next read-write mount replays it for real.
TEST_F(ReadOnlyMountTest, DirtyJournalIsAppliedInMemoryOnly) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  const std::string a = pattern(2 << 20, 4), b = pattern(5000, 5);
  ASSERT_TRUE(write_file(v.at("a"), a));
  ASSERT_TRUE(fsync_path(v.at("a")));
  ASSERT_EQ(::mkdir(v.at("d").c_str(), 0700), 0);
  ASSERT_TRUE(write_file(v.at("d/b"), b));
  ASSERT_TRUE(fsync_path(v.at("d/b")));
  ASSERT_TRUE(fsync_path(v.at("d")));
  ASSERT_TRUE(fsync_path(v.mountpoint()));
  v.kill9();
  const std::vector<uint64_t> before = member_hashes(v);

  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {"-o", "ro"}, &lines)) << lines.seen();
  EXPECT_NE(lines.seen().find("applied in memory only"), std::string::npos) << lines.seen();
  EXPECT_TRUE(read_file(v.at("a")) == a) << "fsync'd 'a' not visible on the read-only mount";
  EXPECT_TRUE(read_file(v.at("d/b")) == b) << "fsync'd 'd/b' not visible on the read-only mount";
  expect_every_change_refused(v, "a");
  expect_clean_exit(v);
  EXPECT_EQ(member_hashes(v), before) << "the read-only mount of a dirty volume wrote to its members";

  RunResult r = v.mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(v.at("a")) == a);
  EXPECT_TRUE(read_file(v.at("d/b")) == b);
  expect_clean_exit(v);
  expect_fsck_clean(v);
}

// ro,norecovery leaves the journal alone: what was fsync'd after the last
// checkpoint is not shown, nothing is written, and it comes back at the
// next read-write mount. norecovery alone is refused.
TEST_F(ReadOnlyMountTest, NorecoveryShowsTheLastCheckpoint) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  const std::string old_data = pattern(100000, 6), new_data = pattern(200000, 7);
  ASSERT_TRUE(write_file(v.at("old"), old_data));
  expect_clean_exit(v);  // checkpointed
  ASSERT_EQ(v.mount().code, 0);
  ASSERT_TRUE(write_file(v.at("new"), new_data));
  ASSERT_TRUE(fsync_path(v.at("new")));
  ASSERT_TRUE(fsync_path(v.mountpoint()));
  v.kill9();
  const std::vector<uint64_t> before = member_hashes(v);

  RunResult refused = v.mount({"-o", "norecovery"});
  EXPECT_EQ(refused.code, 1) << refused.describe();
  EXPECT_NE(refused.err.find("norecovery needs ro"), std::string::npos) << refused.describe();
  EXPECT_FALSE(mount_at(v.mountpoint()));

  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {"-o", "ro,norecovery"}, &lines)) << lines.seen();
  EXPECT_NE(lines.seen().find("are not applied"), std::string::npos) << lines.seen();
  EXPECT_TRUE(read_file(v.at("old")) == old_data);
  struct stat st;
  EXPECT_EQ(outcome(::stat(v.at("new").c_str(), &st)), (Outcome{-1, ENOENT})) << "norecovery applied the journal";
  expect_clean_exit(v);
  EXPECT_EQ(member_hashes(v), before) << "ro,norecovery wrote to its members";

  ASSERT_EQ(v.mount().code, 0);
  EXPECT_TRUE(read_file(v.at("new")) == new_data) << "the journal was lost";
  expect_clean_exit(v);
  expect_fsck_clean(v);
}

// Members the daemon cannot write (here: behind a read-only bind mount,
// which even root cannot open for writing) mount read-only, and only so.
TEST_F(ReadOnlyMountTest, MountsMembersThatAreReadOnlyFiles) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  const std::string a = pattern(1 << 20, 8);
  ASSERT_TRUE(write_file(v.at("a"), a));
  expect_clean_exit(v);
  const std::vector<uint64_t> before = member_hashes(v);

  TempDir view("peregrine-ro-members");
  ASSERT_EQ(::mount(v.dir().c_str(), view.path().c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  struct Unbind {
    std::string dir;
    ~Unbind() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unbind{view.path()};
  ASSERT_EQ(::mount(nullptr, view.path().c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  std::vector<std::string> ro_members;
  for (size_t i = 0; i < v.members().size(); ++i) ro_members.push_back(view / ("m" + std::to_string(i)));
  ASSERT_EQ(outcome(::open(ro_members[0].c_str(), O_RDWR)), (Outcome{-1, EROFS})) << "the bind mount is writable";

  RunResult rw = v.mount({}, ro_members);
  EXPECT_NE(rw.code, 0) << "a read-write mount of read-only members: " << rw.describe();
  EXPECT_FALSE(mount_at(v.mountpoint()));

  RunResult r = v.mount({"-o", "ro"}, ro_members);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(v.at("a")) == a);
  expect_clean_exit(v);
  EXPECT_EQ(member_hashes(v), before);
}

}  // namespace
}  // namespace peregrine::fstest
