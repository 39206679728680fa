// Support for the filesystem integration tests: a real peregrine volume on
// file-backed members in a temporary directory, mounted by the real binary
// (PEREGRINE_BIN) in daemon mode, plus small POSIX helpers.
//
// Synchronisation with the daemon is real: `peregrine mount` returns once
// the filesystem serves, and after an unmount the test waits for the daemon
// to exit with pidfd_open + poll, then reaps it (this process makes itself a
// child subreaper, so the daemon, orphaned by `peregrine mount`, becomes its
// child and its exit status is visible).
//
// Threads: fixtures and helpers run on the test's main thread, except the
// stateless POSIX helpers (Fd, pattern, read_at, write_at), usable anywhere.
#pragma once

#include <functional>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace peregrine::fstest {

// The peregrine binary under test.
const char* peregrine_bin();

// The config file every peregrine started by a test reads unless the test
// names another (--config, config=): this process sets PEREGRINE_CONFIG to
// it at start-up, so /etc/peregrine/peregrine.conf is never read. An empty
// file: built-in defaults and the test's -o only.
inline constexpr const char* kTestConfig = "/dev/null";

// The FUSE transport this run of the mount tests uses ("classic",
// "io-uring"; "" when run outside ctest, which leaves the daemon's default).
const std::string& test_transport();

// Why real mounts cannot run here ("" when they can): not root, no /dev/fuse.
std::string mount_skip_reason();

// ---- processes --------------------------------------------------------------

struct RunResult {
  int code = -1;  // exit status; 128 + signal number when killed
  std::string out, err;
  std::string describe() const;  // "exit N; stdout: ...; stderr: ..." for messages
};

// Runs argv[0] (searched in PATH) with stdin /dev/null; stdout and stderr
// are captured in memory files, so a daemon that keeps them open cannot make
// this wait. Returns once the direct child exits.
RunResult run(const std::vector<std::string>& argv);

// Starts argv (argv[0] a path) in the background with stdin and stdout on
// /dev/null, stderr on `stderr_fd`, and `extra_env` ("K=V") added to this
// process's environment; returns its pid (0 and a test failure on error).
pid_t spawn(const std::vector<std::string>& argv, int stderr_fd, const std::vector<std::string>& extra_env = {});

// `peregrine mount --foreground [options] MEMBERS MOUNTPOINT` for `v`, its
// stderr on a pipe read by `lines`; returns once it logged that it mounted
// (the pid is adopted by `v`, so it is unmounted whatever happens).
class LineReader;
class Volume;
bool mount_foreground(Volume& v, const std::vector<std::string>& options, LineReader* lines,
                      const std::vector<std::string>& extra_env = {});

// Lines of a pipe, read with a deadline (a guard against a hang, not a
// synchronisation: each line is waited for as it is written). Owns the fd.
class LineReader {
 public:
  LineReader() = default;
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  void reset(int fd);
  // The next line, or nullopt at end of file or after `guard_s` seconds.
  std::optional<std::string> next(int guard_s = 60);
  // Reads lines until one contains `text`: false at end of file or on the guard.
  bool wait_for(const std::string& text);
  const std::string& seen() const { return seen_; }  // every line returned so far

 private:
  int fd_ = -1;
  std::string buf_;
  std::string seen_;
};

// Waits (pidfd_open + poll; the guard only turns a hang into a failure) for
// `pid` to exit and reaps it; returns its wait status, or -1 with a gtest
// failure if it does not exit within `guard_seconds` or cannot be reaped.
int wait_exit(pid_t pid, int guard_seconds = 120);

// ---- files ------------------------------------------------------------------

class TempDir {
 public:
  explicit TempDir(const char* prefix = "peregrine-fs");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void remove_tree(const std::string& path);

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes now and returns what close(2) returned (-1 with errno set).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_ = -1;
};

// Deterministic pseudo-random bytes (never all zero over a block, so a hole
// or a lost write is visible).
std::string pattern(size_t size, uint64_t seed);
// Whole-buffer pwrite/pread loops; false (with errno) on error or, for
// read_at, on a short file.
bool write_at(int fd, const void* data, size_t size, off_t offset);
bool write_at(int fd, const std::string& data, off_t offset);
std::string read_at(int fd, size_t size, off_t offset);  // shorter at EOF; errno set if an error
std::string read_file(const std::string& path);          // whole file; throws nothing, "" on error
bool write_file(const std::string& path, const std::string& data, mode_t mode = 0644);
uint64_t hash_file(const std::string& path);  // FNV-1a 64 of the whole content
// hash_file of each path, in order: taken before a command that must be
// refused, compared after it (expect_refused).
std::vector<uint64_t> hash_files(const std::vector<std::string>& paths);
// A refused command: exit 1, stderr names `thing`, and `files` (members)
// hash as `before` did: nothing written.
void expect_refused(const RunResult& r, const std::string& thing, const std::vector<std::string>& files,
                    const std::vector<uint64_t>& before);

// One change of a file, made through an open descriptor of it (or its
// path), for running the same changes on a reference filesystem and on
// the volume.
struct FileStep {
  const char* what;
  std::function<bool(int fd, const std::string& path)> run;
};
// Opens (creating) `ref_path`, on the reference filesystem (ext4 under
// /tmp), and `path`; runs each step on the reference, then on the volume,
// then `compare(step)`. Stops at the first failure (a test failure is
// added). Returns why the test should be skipped if the reference cannot
// make a step (EOPNOTSUPP), else "".
std::string run_beside_reference(const std::vector<FileStep>& steps, const std::string& path,
                                 const std::string& ref_path, const std::function<void(const FileStep&)>& compare);

// One entry of a directory tree, for comparing two trees (side by side, or
// before and after a remount).
struct TreeEntry {
  mode_t mode = 0;  // type and permission bits
  nlink_t nlink = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  off_t size = 0;
  std::string content;  // FNV hash of a file, target of a symlink
  std::map<std::string, std::string> xattrs;
  // Only filled with `with_identity`: what must survive a remount.
  ino_t ino = 0;
  struct timespec mtime {};
  struct timespec ctime {};
  bool operator==(const TreeEntry& o) const;
};
using Tree = std::map<std::string, TreeEntry>;  // relative path -> entry (root excluded)
// Calls visit(relative path, lstat) for every entry below `root`, names in
// order, each directory before its entries.
void walk_tree(const std::string& root, const std::function<void(const std::string&, const struct stat&)>& visit,
               const std::string& rel = "");
// The xattrs of `path` (not following a symlink) whose names `keep` accepts.
std::map<std::string, std::string> read_xattrs(const std::string& path,
                                               const std::function<bool(const std::string&)>& keep);
std::string read_symlink(const std::string& path);  // "" on error
Tree snapshot_tree(const std::string& root, bool with_identity);
std::string describe_tree_difference(const Tree& a, const Tree& b);

// ---- mounts -----------------------------------------------------------------

struct MountEntry {
  std::string source, fstype, options;
};
// The mount whose mount point is exactly `dir`, from /proc/self/mountinfo.
std::optional<MountEntry> mount_at(const std::string& dir);

// A volume of file-backed members in its own temporary directory:
// DIR/m0..m{N-1}, mount point DIR/mnt.
class Volume {
 public:
  explicit Volume(int members = 4, const std::string& member_size = "64M");
  ~Volume();  // unmounts (if mounted) and removes everything
  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  const std::string& dir() const { return dir_.path(); }
  const std::vector<std::string>& members() const { return members_; }
  const std::string& mountpoint() const { return mnt_; }
  std::string at(const std::string& rel) const { return mnt_ + "/" + rel; }
  pid_t daemon_pid() const { return pid_; }
  bool mounted() const { return pid_ > 0; }

  RunResult mkfs(const std::vector<std::string>& extra = {});
  // peregrine mount --pid-file ... [extra] MEMBERS (or `members`) MOUNTPOINT.
  // On exit 0 reads the daemon's pid from the pid file.
  RunResult mount(const std::vector<std::string>& extra = {},
                  const std::optional<std::vector<std::string>>& members = std::nullopt);
  // umount + wait for the daemon; returns its wait status (0 = exit 0).
  // Then waits for the member locks to be released (wait_members_released).
  int unmount();
  // kill -9 the daemon, reap it, run `before_detach`, lazily detach the
  // dead mount, wait for the member locks. A process still using the mount
  // must be ended in `before_detach`: once detached, the mount point's path
  // is the bare directory beneath, on another filesystem, where its next
  // open and fsync succeed.
  void kill9(const std::function<void()>& before_detach = {});
  // Blocks (flock LOCK_EX, a real wait on the kernel) until no process holds
  // a member's lock. Needed after the daemon exited: its io_uring rings are
  // torn down by the kernel asynchronously and keep the member files (and
  // so their flocks) for some milliseconds after the process is gone. See
  // member_locks_test.cpp.
  void wait_members_released() const;
  // Adopts a daemon started some other way (mount(8)); see member_holder().
  void adopt(pid_t pid) { pid_ = pid; }
  // A process (other than this one) with member 0 open, i.e. the daemon
  // serving the volume; 0 if none.
  pid_t member_holder() const;

 private:
  TempDir dir_;
  std::vector<std::string> members_;
  std::string mnt_;
  std::string member_size_;
  pid_t pid_ = 0;
};

// gtest fixture: a fresh 4-member volume mounted before each test and
// unmounted after it, asserting that the daemon exits 0. Subclasses may
// override mount_options() and mkfs_options().
class MountedTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  virtual std::vector<std::string> mount_options() { return {}; }
  virtual std::vector<std::string> mkfs_options() { return {}; }
  std::string at(const std::string& rel) const { return volume_->at(rel); }

  std::optional<Volume> volume_;
};

// MountedTest on a mount with fuse.cache = direct, for the features of that
// mode (tail blocks, small-read blocks, every write reaching the daemon):
// the default mount caches buffered IO in the kernel's page cache.
class DirectMountedTest : public MountedTest {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.cache=direct"}; }
};

// gtest fixture: a fresh 4-member volume, made but not mounted, for tests
// that mount it their own way.
class FreshVolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace();
    RunResult r = volume_->mkfs();
    ASSERT_EQ(r.code, 0) << r.describe();
  }
  void TearDown() override { volume_.reset(); }

  std::optional<Volume> volume_;
};

// The outcome of a system call: its result, or -1 and errno.
struct Outcome {
  long ret = 0;
  int err = 0;
  bool operator==(const Outcome&) const = default;
};
inline Outcome outcome(long r) { return r < 0 ? Outcome{-1, errno} : Outcome{r, 0}; }
void PrintTo(const Outcome& o, std::ostream* os);

// Blocks until no process holds a lock on `members` (the daemon of a mount
// with other members than a Volume's own list), failing after 120 s.
void wait_members_released(const std::vector<std::string>& members);

// nobody's uid and gid, the unprivileged user of the permission tests.
constexpr uid_t kNobody = 65534;
// Runs `op` in a child process as uid/gid kNobody, with `groups` as its
// supplementary groups (none by default) and no capabilities, and returns
// its outcome.
Outcome as_nobody(const std::function<Outcome()>& op, const std::vector<gid_t>& groups = {});

// Side by side: every operation runs on a native directory (the reference)
// and on the mount, and both must give the same result and errno.
class SideBySideTest : public MountedTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Runs op(root) on the native root, then on the mount root; expects the
  // same outcome and returns the mount's.
  template <typename Op>
  Outcome same(const char* what, Op op) {
    errno = 0;
    Outcome native = op(native_->path());
    errno = 0;
    Outcome mounted = op(volume_->mountpoint());
    EXPECT_EQ(native, mounted) << what << " (native vs peregrine)";
    return mounted;
  }
  // Both trees (below their roots) are alike: names, types, modes, sizes,
  // link counts, owners, contents, symlink targets, xattrs.
  void expect_same_trees();

  std::optional<TempDir> native_;
};

// A fixture run once per page-cache mode of the mount (fuse.cache=direct:
// every read and write reaches the daemon; writeback: the kernel caches and
// writes back later), for behaviours the cache could change. Use with
// TEST_P and PEREGRINE_FOR_CACHE_MODES(Suite).
template <typename Base>
class CacheModes : public Base, public ::testing::WithParamInterface<std::string> {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", "fuse.cache=" + this->GetParam()}; }
};
#define PEREGRINE_FOR_CACHE_MODES(suite)                                                                     \
  INSTANTIATE_TEST_SUITE_P(Cache, suite, ::testing::Values(std::string("direct"), std::string("writeback")), \
                           [](const ::testing::TestParamInfo<std::string>& i) { return i.param; })

}  // namespace peregrine::fstest
