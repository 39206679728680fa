// Mount options on real mounts: every flag the table passes to the kernel
// is accepted by libfuse and shows in the mount table, the atime flags the
// kernel cannot get are accepted, and a volume's `options` in the config
// file (what peregrine@NAME.service mounts) may say ro, overridden by -o rw.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "fs_test_util.h"
#include "peregrine/config/mount_flags.h"

namespace peregrine::fstest {
namespace {

bool has_option(const std::string& options, const std::string& opt) {
  return ("," + options + ",").find("," + opt + ",") != std::string::npos;
}

class MountOptionsTest : public FreshVolumeTest {
 protected:
  void unmount_cleanly() {
    int status = volume_->unmount();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  }
};

TEST_F(MountOptionsTest, EveryKernelFlagMountsAndShows) {
  // The kernel names some flags only when set (noexec), others only when
  // they differ from FUSE's nosuid,nodev default (suid shows as no nosuid).
  const std::map<std::string, std::pair<std::string, bool>> shown = {
      {"nosuid", {"nosuid", true}},   {"suid", {"nosuid", false}},   {"nodev", {"nodev", true}},
      {"dev", {"nodev", false}},      {"noexec", {"noexec", true}},  {"exec", {"noexec", false}},
      {"sync", {"sync", true}},       {"async", {"sync", false}},    {"dirsync", {"dirsync", true}},
      {"noatime", {"noatime", true}}, {"atime", {"noatime", false}},
  };
  size_t tried = 0;
  for (const config::MountFlag& f : config::mount_flags()) {
    if (f.use != config::FlagUse::kKernel && !f.kernel_too) continue;
    const std::string name(f.name);
    RunResult r = volume_->mount({"-o", name});
    ASSERT_EQ(r.code, 0) << "-o " << name << ": " << r.describe();
    auto m = mount_at(volume_->mountpoint());
    ASSERT_TRUE(m);
    auto it = shown.find(name);
    ASSERT_NE(it, shown.end()) << name << ": add what the mount table shows for it to this test";
    EXPECT_EQ(has_option(m->options, it->second.first), it->second.second) << "-o " << name << ": " << m->options;
    unmount_cleanly();
    ++tried;
  }
  EXPECT_EQ(tried, shown.size());
  // Not passed on, but accepted.
  RunResult r =
      volume_->mount({"-o", "relatime,strictatime,norelatime,nodiratime,lazytime,defaults,nofail,x-systemd.after=a"});
  ASSERT_EQ(r.code, 0) << r.describe();
  unmount_cleanly();
}

// peregrine mount NAME (the systemd unit's command): the volume's options
// may say ro; -o rw on the command line wins over them.
TEST_F(MountOptionsTest, VolumeOptionsMayMountReadOnly) {
  Volume& v = *volume_;
  ASSERT_EQ(v.mount().code, 0);
  const std::string data = pattern(70000, 9);
  ASSERT_TRUE(write_file(v.at("f"), data));
  unmount_cleanly();

  const std::string conf = v.dir() + "/vol.conf";
  std::string members;
  for (const std::string& m : v.members()) members += (members.empty() ? "\"" : ", \"") + m + "\"";
  std::ofstream(conf) << "[volume.data]\nmembers = [" << members << "]\nmountpoint = \"" << v.mountpoint()
                      << "\"\noptions = \"ro,noexec,x-systemd.requires=local-fs.target\"\n";
  const std::string pid_file = v.dir() + "/named.pid";
  for (bool read_only : {true, false}) {
    std::vector<std::string> argv = {peregrine_bin(), "mount", "--pid-file", pid_file, "-c", conf};
    if (!read_only) argv.insert(argv.end(), {"-o", "rw"});
    argv.push_back("data");
    RunResult r = run(argv);
    ASSERT_EQ(r.code, 0) << r.describe();
    v.adopt(static_cast<pid_t>(std::atoi(read_file(pid_file).c_str())));
    auto m = mount_at(v.mountpoint());
    ASSERT_TRUE(m);
    EXPECT_EQ(has_option(m->options, "ro"), read_only) << m->options;
    EXPECT_TRUE(has_option(m->options, "noexec")) << m->options;
    EXPECT_TRUE(read_file(v.at("f")) == data);
    Fd fd(::open(v.at("new").c_str(), O_WRONLY | O_CREAT, 0644));
    EXPECT_EQ(fd.ok(), !read_only) << std::strerror(errno);
    if (read_only) {
      EXPECT_EQ(errno, EROFS);
    }
    fd.reset();
    unmount_cleanly();
  }
}

}  // namespace
}  // namespace peregrine::fstest
