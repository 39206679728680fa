// mount(8) with the mount.peregrine helper, for real: `mount -t peregrine
// MEMBER,... DIR -o ...`, an fstab line (mount -T FILE), and a volume NAME
// from the config file. The helper is found as /sbin/mount.peregrine: the
// test links it to the binary under test when no helper is installed, and
// removes the link afterwards.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

constexpr const char* kHelper = "/sbin/mount.peregrine";

class MountHelperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    char target[PATH_MAX];
    ssize_t n = ::readlink(kHelper, target, sizeof target - 1);
    if (n > 0) {
      target[n] = '\0';
      if (std::string(target) != peregrine_bin())
        GTEST_SKIP() << kHelper << " is installed (-> " << target << "); not replacing it with this build";
    } else if (::access(kHelper, F_OK) == 0) {
      GTEST_SKIP() << kHelper << " exists and is not a link to this build; not replacing it";
    } else {
      ASSERT_EQ(::symlink(peregrine_bin(), kHelper), 0) << kHelper << ": " << std::strerror(errno);
      made_link_ = true;
    }
    volume_.emplace();
    RunResult m = volume_->mkfs();
    ASSERT_EQ(m.code, 0) << m.describe();
  }
  void TearDown() override {
    if (volume_ && volume_->mounted()) {
      int status = volume_->unmount();
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
    }
    volume_.reset();
    if (made_link_) ::unlink(kHelper);
  }

  std::string member_list(const std::vector<size_t>& order) const {
    std::string s;
    for (size_t i : order) s += (s.empty() ? "" : ",") + volume_->members()[i];
    return s;
  }
  // After a successful mount(8) of `source`: it is a peregrine mount that
  // shows that source (what df, findmnt and mount -a see) and serves data,
  // and its daemon is adopted so TearDown unmounts it and checks its exit.
  void expect_mounted_and_serving(const std::string& source) {
    auto m = mount_at(volume_->mountpoint());
    ASSERT_TRUE(m) << "mount(8) returned 0 but nothing is mounted";
    EXPECT_EQ(m->fstype, "fuse.peregrine");
    EXPECT_EQ(m->source, source);
    pid_t daemon = volume_->member_holder();
    ASSERT_GT(daemon, 0) << "no process holds the members";
    volume_->adopt(daemon);
    const std::string data = pattern(300000, 3);
    ASSERT_TRUE(write_file(volume_->at("through-mount8"), data));
    EXPECT_TRUE(read_file(volume_->at("through-mount8")) == data);
  }

  bool made_link_ = false;
  std::optional<Volume> volume_;
};

TEST_F(MountHelperTest, MountTypePeregrineWithMemberList) {
  RunResult r = run({"mount", "-t", "peregrine", member_list({2, 0, 3, 1}), volume_->mountpoint(), "-o",
                     "fuse.cache=writeback,noatime"});
  ASSERT_EQ(r.code, 0) << r.describe();
  expect_mounted_and_serving(member_list({2, 0, 3, 1}));
}

TEST_F(MountHelperTest, FstabLine) {
  std::string fstab = volume_->dir() + "/fstab";
  ASSERT_TRUE(write_file(fstab, "# test fstab\n" + member_list({0, 1, 2, 3}) + "  " + volume_->mountpoint() +
                                    "  peregrine  defaults,noauto,nofail,_netdev,x-systemd.requires=local-fs.target,"
                                    "fuse.cache=writeback  0  0\n"));
  RunResult r = run({"mount", "-T", fstab, volume_->mountpoint()});
  ASSERT_EQ(r.code, 0) << r.describe();
  expect_mounted_and_serving(member_list({0, 1, 2, 3}));
}

TEST_F(MountHelperTest, VolumeNameFromTheConfigFile) {
  std::string conf = volume_->dir() + "/peregrine.conf";
  std::string members;
  for (const std::string& m : volume_->members()) members += (members.empty() ? "\"" : ", \"") + m + "\"";
  ASSERT_TRUE(write_file(conf, "[volume.testvol]\nmembers = [" + members + "]\nmountpoint = \"" +
                                   volume_->mountpoint() + "\"\noptions = \"fuse.cache=writeback\"\n"));
  RunResult r = run({"mount", "-t", "peregrine", "testvol", volume_->mountpoint(), "-o", "config=" + conf});
  ASSERT_EQ(r.code, 0) << r.describe();
  expect_mounted_and_serving("testvol");
}

// `mount -a` skips an fstab line that is mounted already, as for any other
// filesystem: mount(8) finds it by its source in the mount table, so the
// mount must show the source as fstab spells it (a member list or a volume
// NAME), not peregrine:LABEL. mount -T reads this file as the fstab.
TEST_F(MountHelperTest, MountAllSkipsAnFstabLineThatIsMounted) {
  std::string conf = volume_->dir() + "/peregrine.conf";
  std::string members;
  for (const std::string& m : volume_->members()) members += (members.empty() ? "\"" : ", \"") + m + "\"";
  ASSERT_TRUE(write_file(conf, "[volume.nu]\nmembers = [" + members + "]\n"));
  const std::string umount_helper = volume_->dir() + "/umount.fuse.peregrine";
  ASSERT_EQ(::symlink(peregrine_bin(), umount_helper.c_str()), 0) << std::strerror(errno);
  for (const std::string& source : {member_list({1, 0, 2, 3}), std::string("nu")}) {
    std::string fstab = volume_->dir() + "/fstab";
    ASSERT_TRUE(write_file(fstab, source + "  " + volume_->mountpoint() + "  peregrine  config=" + conf + "  0  0\n"));
    RunResult first = run({"mount", "-a", "-T", fstab});
    ASSERT_EQ(first.code, 0) << source << ": " << first.describe();
    expect_mounted_and_serving(source);
    RunResult again = run({"mount", "-a", "-T", fstab});
    EXPECT_EQ(again.code, 0) << source << ": the mounted line was not skipped: " << again.describe();
    EXPECT_EQ(again.err, "") << source;
    // findmnt says which volume it is; peregrine stats and the umount(8)
    // helper find the daemon whatever the source.
    RunResult findmnt = run({"findmnt", "-n", "-o", "SOURCE", volume_->mountpoint()});
    EXPECT_EQ(findmnt.out, source + "\n") << findmnt.describe();
    RunResult stats = run({peregrine_bin(), "stats", volume_->mountpoint()});
    EXPECT_EQ(stats.code, 0) << stats.describe();
    const pid_t daemon = volume_->daemon_pid();
    RunResult u = run({umount_helper, volume_->mountpoint(), "-t", "fuse.peregrine"});
    ASSERT_EQ(u.code, 0) << u.describe();
    int status = 0;
    ASSERT_EQ(::waitpid(daemon, &status, WNOHANG), daemon) << "the daemon is still running after the helper returned";
    volume_->adopt(0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    volume_->wait_members_released();
  }
}

TEST_F(MountHelperTest, RefusalsComeBackThroughMount8) {
  RunResult missing = run({"mount", "-t", "peregrine", member_list({0, 1, 2}), volume_->mountpoint()});
  EXPECT_NE(missing.code, 0) << missing.describe();
  EXPECT_NE(missing.err.find("missing"), std::string::npos) << missing.err;
  RunResult unknown =
      run({"mount", "-t", "peregrine", member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "no.such_setting=1"});
  EXPECT_NE(unknown.code, 0) << unknown.describe();
  EXPECT_NE(unknown.err.find("no.such_setting"), std::string::npos) << unknown.err;
  RunResult bogus = run({"mount", "-t", "peregrine", "-o", "noexce", member_list({0, 1, 2, 3}), volume_->mountpoint()});
  EXPECT_NE(bogus.code, 0) << bogus.describe();
  EXPECT_NE(bogus.err.find("did you mean noexec?"), std::string::npos) << bogus.err;
  // A remount of a directory where no volume is mounted says so.
  RunResult remount = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "remount,rw"});
  EXPECT_EQ(remount.code, 32) << remount.describe();
  EXPECT_NE(remount.err.find("no peregrine volume is mounted there"), std::string::npos) << remount.err;
  EXPECT_FALSE(mount_at(volume_->mountpoint()));
  EXPECT_EQ(volume_->member_holder(), 0);
}

// mount -o remount,ro and back to rw, as xfstests (generic/294, 306, 452)
// and administrators do it: through mount(8) with the type, and the helper
// itself. The daemon keeps serving; the data stays; the kernel refuses
// changes while read-only; noexec comes and goes. A volume the daemon
// serves read-only cannot be remounted read-write.
TEST_F(MountHelperTest, RemountReadOnlyAndBack) {
  RunResult m = volume_->mount();
  ASSERT_EQ(m.code, 0) << m.describe();
  const pid_t daemon = volume_->daemon_pid();
  ASSERT_TRUE(write_file(volume_->at("kept"), "before the remount"));
  RunResult ro = run(
      {"mount", "-t", "fuse.peregrine", "-o", "remount,ro,noexec", member_list({0, 1, 2, 3}), volume_->mountpoint()});
  if (ro.code != 0) {  // mount(8) without a fuse.peregrine helper: the helper itself
    ro = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "remount,ro,noexec"});
  }
  ASSERT_EQ(ro.code, 0) << ro.describe();
  auto entry = mount_at(volume_->mountpoint());
  ASSERT_TRUE(entry);
  EXPECT_NE(("," + entry->options + ",").find(",ro,"), std::string::npos) << entry->options;
  EXPECT_NE(("," + entry->options + ",").find(",noexec,"), std::string::npos) << entry->options;
  EXPECT_FALSE(write_file(volume_->at("refused"), "x"));
  EXPECT_EQ(errno, EROFS);
  EXPECT_EQ(read_file(volume_->at("kept")), "before the remount");
  RunResult rw = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "remount,rw,exec"});
  ASSERT_EQ(rw.code, 0) << rw.describe();
  entry = mount_at(volume_->mountpoint());
  ASSERT_TRUE(entry);
  EXPECT_EQ(("," + entry->options + ",").find(",noexec,"), std::string::npos) << entry->options;
  EXPECT_TRUE(write_file(volume_->at("after"), "after the remount"));
  EXPECT_EQ(read_file(volume_->at("after")), "after the remount");
  EXPECT_EQ(volume_->daemon_pid(), daemon);  // the same daemon served it all along
  ASSERT_EQ(volume_->unmount(), 0);

  m = volume_->mount({"-o", "ro"});
  ASSERT_EQ(m.code, 0) << m.describe();
  RunResult refused = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "remount,rw"});
  EXPECT_EQ(refused.code, 32) << refused.describe();
  EXPECT_NE(refused.err.find("serves this volume read-only"), std::string::npos) << refused.err;
  EXPECT_FALSE(write_file(volume_->at("still-refused"), "x"));
}

// `mount -t peregrine -o ro,...` and an fstab line with ro: a read-only
// kernel mount with the flags asked for, data served, changes refused.
TEST_F(MountHelperTest, ReadOnlyWithKernelFlags) {
  ASSERT_EQ(volume_->mount().code, 0);
  const std::string data = pattern(200000, 5);
  ASSERT_TRUE(write_file(volume_->at("kept"), data));
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  std::string fstab = volume_->dir() + "/fstab";
  ASSERT_TRUE(
      write_file(fstab, member_list({1, 0, 3, 2}) + " " + volume_->mountpoint() +
                            " peregrine ro,noexec,nosuid,nodev,noatime,allow_other,nofail,x-systemd.after=x 0 0\n"));
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"mount", "-t", "peregrine", "-o", "ro,noexec,nosuid,nodev,noatime,allow_other",
                                 member_list({0, 1, 2, 3}), volume_->mountpoint()},
        std::vector<std::string>{"mount", "-T", fstab, volume_->mountpoint()}}) {
    RunResult r = run(argv);
    ASSERT_EQ(r.code, 0) << r.describe();
    auto m = mount_at(volume_->mountpoint());
    ASSERT_TRUE(m) << "mount(8) returned 0 but nothing is mounted";
    const std::string opts = "," + m->options + ",";
    for (const char* want : {",ro,", ",noexec,", ",nosuid,", ",nodev,", ",noatime,", ",allow_other,"})
      EXPECT_NE(opts.find(want), std::string::npos) << want << " missing from " << m->options;
    pid_t daemon = volume_->member_holder();
    ASSERT_GT(daemon, 0);
    volume_->adopt(daemon);
    EXPECT_TRUE(read_file(volume_->at("kept")) == data);
    errno = 0;
    EXPECT_EQ(::open(volume_->at("new").c_str(), O_WRONLY | O_CREAT, 0644), -1);
    EXPECT_EQ(errno, EROFS);
    status = volume_->unmount();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
}

TEST_F(MountHelperTest, FakeAndVerboseFlags) {
  // -f checks and says what it would run, and mounts nothing; generic
  // options are dropped from the peregrine command, settings kept.
  RunResult r = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-fv", "-o",
                     "rw,nofail,fuse.cache=writeback,x-systemd.device-timeout=5"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.err.find("would run: peregrine mount --source " + member_list({0, 1, 2, 3}) +
                       " -o fuse.cache=writeback " + volume_->members()[0]),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(mount_at(volume_->mountpoint()));
  EXPECT_EQ(volume_->member_holder(), 0);
  RunResult bad = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-o", "bogus"});
  EXPECT_EQ(bad.code, 1) << bad.describe();
  EXPECT_NE(bad.err.find("bogus"), std::string::npos) << bad.err;
  RunResult sloppy = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-sf", "-o", "bogus"});
  EXPECT_EQ(sloppy.code, 0) << sloppy.describe();
  // A CPU list keeps its commas inside its setting.
  RunResult cpus = run({kHelper, member_list({0, 1, 2, 3}), volume_->mountpoint(), "-f", "-o",
                        "noatime,drive.cpus=0,1,fuse.cache=writeback"});
  EXPECT_EQ(cpus.code, 0) << cpus.describe();
  EXPECT_NE(cpus.err.find("-o fuse.atime=noatime,drive.cpus=0,1,fuse.cache=writeback,noatime "), std::string::npos)
      << cpus.err;
}

}  // namespace
}  // namespace peregrine::fstest
