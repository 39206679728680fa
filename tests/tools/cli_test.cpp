// What a first user of the `peregrine` command meets: help text that names
// values, errors that name the command as it was typed and the thing that
// is wrong, bare member names, and a pid file that goes with the daemon.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PeregrineCli, MkfsTakesBareMemberNamesInTheCurrentDirectory) {
  TempDir dir("peregrine-cli");
  // `cd DIR && peregrine mkfs --size 64M a b`: the names have no directory part.
  RunResult r = run({"sh", "-c", "cd '" + dir.path() + "' && exec '" + peregrine_bin() + "' mkfs --size 64M a b"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(std::filesystem::file_size(dir / "a"), 64u << 20);
  EXPECT_EQ(std::filesystem::file_size(dir / "b"), 64u << 20);
  r = run({peregrine_bin(), "info", dir / "b", dir / "a"});
  EXPECT_EQ(r.code, 0) << r.describe();
}

TEST(PeregrineCli, MkfsErrorsNameTheCommandAsItWasInvoked) {
  RunResult r = run({peregrine_bin(), "mkfs"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(r.err.starts_with("peregrine mkfs: no members given")) << r.describe();

  TempDir dir("peregrine-cli");
  std::string alias = dir / "mkfs.peregrine";
  ASSERT_EQ(::symlink(peregrine_bin(), alias.c_str()), 0) << std::strerror(errno);
  r = run({alias});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(r.err.starts_with("mkfs.peregrine: no members given")) << r.describe();
}

TEST(PeregrineCli, HelpNamesEveryValueAndKeepsPathsWhole) {
  for (const char* cmd : {"mkfs", "info", "fsck", "mount", "stats"}) {
    RunResult r = run({peregrine_bin(), cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.describe();
    EXPECT_FALSE(contains(r.out, " arg ") || contains(r.out, " arg\n")) << cmd << " --help:\n" << r.out;
  }
  RunResult r = run({peregrine_bin(), "mount", "--help"});
  EXPECT_TRUE(contains(r.out, "--config ] FILE")) << r.out;
  EXPECT_TRUE(contains(r.out, "--pid-file FILE")) << r.out;
  EXPECT_TRUE(contains(r.out, "/etc/peregrine/peregrine.conf")) << "the default path is broken across lines:\n"
                                                                  << r.out;
}

TEST(PeregrineCli, StatsWatchStatesItsRangeRight) {
  RunResult r = run({peregrine_bin(), "stats", "--watch", "0", "/"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--watch 0: the interval must be more than 0 and at most 86400 seconds"))
      << r.describe();
}

TEST(PeregrineCli, StatsOnAnotherFilesystemNamesItsType) {
  RunResult r = run({peregrine_bin(), "stats", "/"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "/: not a peregrine mount (it is on /, of type ")) << r.describe();
  EXPECT_FALSE(contains(r.err, " a ext")) << r.describe();
}

// `peregrine mount -c FILE NAME [MOUNTPOINT]` with a NAME the file does not
// define: say so, and list the names it does define.
TEST(PeregrineCli, MountOfAnUndefinedVolumeListsTheDefinedOnes) {
  TempDir dir("peregrine-cli");
  std::string conf = dir / "vol.conf";
  std::ofstream(conf) << "[volume.data]\nmembers = [\"" << (dir / "m0") << "\"]\nmountpoint = \"" << dir.path()
                      << "\"\n\n[volume.scratch]\nmembers = [\"" << (dir / "m1") << "\"]\n";
  const std::string expected = "unknown volume 'nope': " + conf + " has no [volume.nope] section; volumes defined: data, scratch";

  RunResult r = run({peregrine_bin(), "mount", "-c", conf, "nope"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, expected)) << r.describe();
  EXPECT_FALSE(contains(r.err, "give at least one member")) << r.describe();

  r = run({peregrine_bin(), "mount", "-c", conf, "nope", dir.path()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, expected)) << r.describe();
  EXPECT_FALSE(contains(r.err, "No such file")) << r.describe();
}

// -o speaks one vocabulary (the one mount.peregrine and volume options
// use): an unknown option is refused with the closest known one, remount
// says what to do instead, norecovery needs ro. Refused before anything is
// opened: the members need not exist.
TEST(PeregrineCli, MountRefusesUnknownOptionsWithASuggestion) {
  TempDir dir("peregrine-cli");
  const std::pair<const char*, const char*> cases[] = {
      {"bogus=1", "peregrine mount: -o bogus=1: unknown mount option"},
      {"noexce", "-o noexce: unknown mount option; did you mean noexec?"},
      {"allow_othr", "did you mean allow_other?"},
      {"fuse.cahce=direct", "did you mean fuse.cache?"},
      {"remount,rw", "-o remount: remount is not supported: unmount and mount again"},
      {"norecovery", "norecovery needs ro"},
  };
  for (const auto& [option, expected] : cases) {
    RunResult r = run({peregrine_bin(), "mount", "-o", option, dir / "m0", dir.path()});
    EXPECT_EQ(r.code, 1) << option << ": " << r.describe();
    EXPECT_TRUE(contains(r.err, expected)) << option << ": " << r.describe();
    EXPECT_FALSE(contains(r.err, "ignoring")) << option << ": " << r.describe();
    EXPECT_FALSE(contains(r.err, "m0")) << option << ": got as far as the members: " << r.describe();
  }
}

// drive.cpus naming a CPU this machine does not have is refused, naming
// the key, the CPU and what the machine has; nothing is mounted.
TEST(PeregrineCli, MountRefusesACpuTheMachineDoesNotHave) {
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  RunResult r = v.mount({"-o", "drive.cpus=0,1023"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "drive.cpus = 0,1023: this machine has no CPU 1023 online (CPUs online: "))
      << r.describe();
  EXPECT_FALSE(mount_at(v.mountpoint()));
}

// The pid file names a running daemon: it goes when the daemon exits cleanly.
TEST(PeregrineCli, PidFileIsRemovedWhenTheDaemonExitsCleanly) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  m = v.mount();  // --pid-file DIR/daemon.pid
  ASSERT_EQ(m.code, 0) << m.describe();
  const std::string pid_file = v.dir() + "/daemon.pid";
  ASSERT_TRUE(std::filesystem::exists(pid_file));
  int status = v.unmount();  // returns once the daemon has exited
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  EXPECT_FALSE(std::filesystem::exists(pid_file)) << pid_file << " outlived the daemon";
}

TEST(PeregrineCli, PidFileOfAForegroundDaemonIsRemovedWhenItExits) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  const std::string pid_file = v.dir() + "/foreground.pid";
  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {"--pid-file", pid_file}, &lines)) << lines.seen();
  // Whenever the daemon wrote it (once ready), it must be gone once it exited.
  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  EXPECT_FALSE(std::filesystem::exists(pid_file)) << pid_file << " outlived the daemon";
}

}  // namespace
}  // namespace peregrine::fstest
