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
  EXPECT_TRUE(contains(r.err, "--watch 0: the interval must be more than 0 and at most 86400 seconds")) << r.describe();
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
  const std::string expected =
      "unknown volume 'nope': " + conf + " has no [volume.nope] section; volumes defined: data, scratch";

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
      {"remount,rw", "-o remount: only through mount(8) (mount -o remount,ro DIR)"},
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

// The metadata area is sized for a number of files (mkfs --bytes-per-inode,
// --inodes; docs/format.md, section 4), and `peregrine info` shows its size
// and use: how much is taken and about how many more files fit.
std::string line_of(const std::string& text, const std::string& key) {
  size_t at = text.find(key);
  if (at == std::string::npos) return "";
  size_t end = text.find('\n', at);
  return text.substr(at, end - at);
}
uint64_t number_after(const std::string& text, const std::string& key) {
  size_t at = text.find(key);
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
}

TEST(PeregrineCli, MkfsSizesTheMetadataAreaForFilesAndInfoShowsItsUse) {
  TempDir dir("peregrine-cli");
  const std::string a = dir / "a", b = dir / "b";
  // 2 x 128M: 254 MiB of volume. The default (one file per 64K) asks for
  // less than the 16 MiB minimum.
  RunResult r = run({peregrine_bin(), "mkfs", "--size", "128M", a, b});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "metadata area:    offset 0, 16 MiB")) << r.out;
  EXPECT_TRUE(contains(r.out, "metadata holds:   24560 files at 256 bytes each")) << r.out;
  r = run({peregrine_bin(), "info", a, b});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "metadata split:   journal 4 MiB, two checkpoint slots of 6 MiB")) << r.out;
  EXPECT_TRUE(contains(r.out, "for 1 inodes (never mounted)")) << r.out;
  const uint64_t fresh_free = number_after(r.out, "files free:       about ");
  // 6 MiB less its header and reserves, at 128 bytes per file.
  EXPECT_GT(fresh_free, 45000u) << line_of(r.out, "files free:");
  EXPECT_LT(fresh_free, 49152u) << line_of(r.out, "files free:");

  // --inodes 100000: 25.6 MB of checkpoint, so slots of that size, a
  // quarter of the area for the journal, rounded up to whole stripe rows.
  r = run({peregrine_bin(), "mkfs", "--force", "--inodes", "100000", a, b});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "metadata area:    offset 0, 66816 KiB")) << r.out;
  EXPECT_TRUE(contains(r.out, "metadata holds:   100208 files")) << r.out;
  // --bytes-per-inode 2K: 254 MiB / 2 KiB = 130048 files.
  r = run({peregrine_bin(), "mkfs", "--force", "-i", "2K", a, b});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_GE(number_after(r.out, "metadata holds:   "), 130048u) << r.out;
  EXPECT_LT(number_after(r.out, "metadata holds:   "), 130048u + 2000) << r.out;

  r = run({peregrine_bin(), "mkfs", "--force", "--inodes", "0", a, b});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--inodes: '0' is not a positive whole number")) << r.describe();
  r = run({peregrine_bin(), "mkfs", "--force", "--inodes", "5000", "--bytes-per-inode", "4K", a, b});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "at most one of --meta-size, --inodes and --bytes-per-inode")) << r.describe();
  r = run({peregrine_bin(), "mkfs", "--force", "--inodes", "10000000", a, b});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "10000000 files need a")) << r.describe();

  r = run({peregrine_bin(), "mkfs", "--help"});
  EXPECT_TRUE(contains(r.out, "--bytes-per-inode ] SIZE")) << r.out;
  EXPECT_TRUE(contains(r.out, "at 256 bytes per file")) << r.out;
}

TEST(PeregrineCli, InfoCountsTheFilesOfAMountedVolume) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  RunResult m = v.mkfs();
  ASSERT_EQ(m.code, 0) << m.describe();
  m = v.mount();
  ASSERT_EQ(m.code, 0) << m.describe();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(write_file(v.at("f" + std::to_string(i)), "x"));
  int status = v.unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  std::vector<std::string> argv = {peregrine_bin(), "info"};
  for (const std::string& member : v.members()) argv.push_back(member);
  RunResult r = run(argv);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "for 101 inodes\n")) << r.out;
  // Each file: inode 82 bytes, entry 17 + 2 or 3, one extent 25.
  EXPECT_TRUE(contains(r.out, "more, at 128 bytes each")) << r.out;
}

}  // namespace
}  // namespace peregrine::fstest
