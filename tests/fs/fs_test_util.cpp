#include "fs_test_util.h"

#include "peregrine/volume/mount_table.h"

#include <dirent.h>
#include <grp.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <spawn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace peregrine::fstest {

namespace {

// Orphaned daemons become our children, so their exit status can be reaped.
const bool kSubreaper = [] { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }();

// Every mount test runs once per FUSE transport (tests/fs/CMakeLists.txt
// sets PEREGRINE_TEST_TRANSPORT). The daemon's default, fuse.transport =
// auto, picks io-uring when the kernel offers it: for the classic runs,
// every daemon this process starts (directly, or through mount(8)) is shown
// a stand-in for the module parameter that reads N.
const std::string kTestTransport = [] {
  const char* t = std::getenv("PEREGRINE_TEST_TRANSPORT");
  std::string transport = t != nullptr ? t : "";
  if (transport == "classic") {
    static char path[] = "/tmp/peregrine-uring-off-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd >= 0 && ::write(fd, "N\n", 2) == 2) ::setenv("PEREGRINE_FUSE_URING_PARAM", path, 1);
    if (fd >= 0) {
      ::close(fd);
      // Every test binary run makes one; without this /tmp kept thousands.
      std::atexit([] { ::unlink(path); });
    }
  }
  return transport;
}();

// Hermetic mounts: no test reads the machine's own config file (a user's
// low_watermark_per_drive = 4 in /etc/peregrine/peregrine.conf failed the
// member-fault tests, which mount with -o high_watermark_per_drive=1).
// Every peregrine this process starts, directly or through mount(8) and
// mount.peregrine, reads kTestConfig instead, through the variable users
// have too (config_path.h); a test that wants a file names it (--config,
// config=), which wins over the variable.
const bool kHermeticConfig = [] { return ::setenv("PEREGRINE_CONFIG", kTestConfig, 1) == 0; }();

bool kernel_offers_fuse_uring() {
  std::ifstream in("/sys/module/fuse/parameters/enable_uring");
  std::string v;
  return in && std::getline(in, v) && (v == "Y" || v == "1");
}

std::string read_fd_from_start(int fd) {
  std::string out;
  char buf[4096];
  off_t off = 0;
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, off)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return out;
}

uint64_t fnv(uint64_t h, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

const char* peregrine_bin() { return PEREGRINE_BIN; }

const std::string& test_transport() { return kTestTransport; }

std::string mount_skip_reason() {
  if (::geteuid() != 0) return "needs root (real FUSE mounts of file-backed members)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "/dev/fuse is missing or not accessible";
  if (!kSubreaper) return "cannot become a child subreaper to reap the daemon";
  if (!kHermeticConfig) return "cannot set PEREGRINE_CONFIG: the mounts would read the system's config file";
  if (kTestTransport == "io-uring" && !kernel_offers_fuse_uring()) {
    return "the io-uring run needs FUSE over io_uring (the ctest fixture fuse_uring_on turns the fuse "
           "module's enable_uring on; this kernel has it off or lacks it)";
  }
  return "";
}

std::string RunResult::describe() const {
  return "exit " + std::to_string(code) + "; stdout: " + out + "; stderr: " + err;
}

RunResult run(const std::vector<std::string>& argv) {
  RunResult r;
  int out = ::memfd_create("stdout", MFD_CLOEXEC);
  int err = ::memfd_create("stderr", MFD_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_fd_from_start(out);
  r.err = read_fd_from_start(err);
  ::close(out);
  ::close(err);
  return r;
}

pid_t spawn(const std::vector<std::string>& argv, int stderr_fd, const std::vector<std::string>& extra_env) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, stderr_fd, 2);
  std::vector<std::string> args = argv;
  std::vector<char*> av;
  for (std::string& a : args) av.push_back(a.data());
  av.push_back(nullptr);
  std::vector<std::string> env_s = extra_env;
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& e : env_s) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, av[0], &fa, nullptr, av.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << std::strerror(rc);
    return 0;
  }
  return pid;
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

void LineReader::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  buf_.clear();
}

std::optional<std::string> LineReader::next(int guard_s) {
  for (;;) {
    size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      seen_ += line + "\n";
      return line;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, guard_s * 1000) <= 0) return std::nullopt;
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) return std::nullopt;
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

bool LineReader::wait_for(const std::string& text) {
  while (auto line = next()) {
    if (line->find(text) != std::string::npos) return true;
  }
  return false;
}

bool mount_foreground(Volume& v, const std::vector<std::string>& options, LineReader* lines,
                      const std::vector<std::string>& extra_env) {
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return false;
  std::vector<std::string> args = {peregrine_bin(), "mount", "--foreground"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), v.members().begin(), v.members().end());
  args.push_back(v.mountpoint());
  pid_t pid = spawn(args, err_pipe[1], extra_env);
  ::close(err_pipe[1]);
  lines->reset(err_pipe[0]);
  if (pid == 0) return false;
  v.adopt(pid);
  return lines->wait_for("mounted " + std::to_string(v.members().size()) + " members");
}

int wait_exit(pid_t pid, int guard_seconds) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    ADD_FAILURE() << "pidfd_open(" << pid << "): " << std::strerror(errno);
    return -1;
  }
  struct pollfd p = {pidfd, POLLIN, 0};
  int n;
  while ((n = ::poll(&p, 1, guard_seconds * 1000)) < 0 && errno == EINTR) {
  }
  ::close(pidfd);
  if (n == 0) {
    ADD_FAILURE() << "daemon " << pid << " did not exit within " << guard_seconds << " s";
    return -1;
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) {
    ADD_FAILURE() << "waitpid(" << pid << "): " << std::strerror(errno);
    return -1;
  }
  return status;
}

TempDir::TempDir(const char* prefix) {
  std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  path_ = tmpl;
  // Unprivileged test users must reach mount points below it.
  ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() { remove_tree(path_); }

void remove_tree(const std::string& path) {
  ::nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; }, 64,
      FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

std::string pattern(size_t size, uint64_t seed) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>((x & 0xFF) | 1);  // never zero: holes stand out
  }
  return out;
}

bool write_at(int fd, const void* data, size_t size, off_t offset) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd, p, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

bool write_at(int fd, const std::string& data, off_t offset) { return write_at(fd, data.data(), data.size(), offset); }

std::string read_at(int fd, size_t size, off_t offset) {
  std::string out(size, '\0');
  size_t got = 0;
  errno = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, out.data() + got, size - got, offset + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

std::string read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (!fd.ok()) return "";
  std::string out;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

bool write_file(const std::string& path, const std::string& data, mode_t mode) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode));
  return fd.ok() && write_at(fd.get(), data, 0);
}

std::string run_beside_reference(const std::vector<FileStep>& steps, const std::string& path,
                                 const std::string& ref_path, const std::function<void(const FileStep&)>& compare) {
  Fd ours(::open(path.c_str(), O_RDWR | O_CREAT, 0644));
  Fd ref(::open(ref_path.c_str(), O_RDWR | O_CREAT, 0644));
  if (!ours.ok() || !ref.ok()) {
    ADD_FAILURE() << "open " << path << " and " << ref_path << ": " << std::strerror(errno);
    return "";
  }
  for (const FileStep& step : steps) {
    if (!step.run(ref.get(), ref_path)) {
      if (errno == EOPNOTSUPP) return std::string("the reference filesystem under /tmp cannot: ") + step.what;
      ADD_FAILURE() << step.what << " on the reference: " << std::strerror(errno);
      return "";
    }
    if (!step.run(ours.get(), path)) {
      ADD_FAILURE() << step.what << ": " << std::strerror(errno);
      return "";
    }
    compare(step);
    if (::testing::Test::HasFailure()) return "";
  }
  return "";
}

uint64_t hash_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  uint64_t h = 14695981039346656037ULL;
  if (!fd.ok()) return 0;
  std::string buf(1 << 20, '\0');
  ssize_t n;
  while ((n = ::read(fd.get(), buf.data(), buf.size())) > 0) h = fnv(h, buf.data(), static_cast<size_t>(n));
  return h;
}

std::vector<uint64_t> hash_files(const std::vector<std::string>& paths) {
  std::vector<uint64_t> h;
  for (const std::string& p : paths) h.push_back(hash_file(p));
  return h;
}

void expect_refused(const RunResult& r, const std::string& thing, const std::vector<std::string>& files,
                    const std::vector<uint64_t>& before) {
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find(thing), std::string::npos) << "stderr does not name '" << thing << "': " << r.err;
  EXPECT_EQ(hash_files(files), before) << "a refused command wrote to the members";
}

bool TreeEntry::operator==(const TreeEntry& o) const {
  return mode == o.mode && nlink == o.nlink && uid == o.uid && gid == o.gid && size == o.size && content == o.content &&
         xattrs == o.xattrs && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec &&
         ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
}

void walk_tree(const std::string& root, const std::function<void(const std::string&, const struct stat&)>& visit,
               const std::string& rel) {
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
    visit(r, st);
    if (S_ISDIR(st.st_mode)) walk_tree(root, visit, r);
  }
}

std::map<std::string, std::string> read_xattrs(const std::string& path,
                                               const std::function<bool(const std::string&)>& keep) {
  std::map<std::string, std::string> out;
  char names_buf[65536];
  ssize_t len = ::llistxattr(path.c_str(), names_buf, sizeof names_buf);
  for (ssize_t i = 0; i < len;) {
    std::string name = names_buf + i;
    i += static_cast<ssize_t>(name.size()) + 1;
    if (!keep(name)) continue;
    char value[65536];
    ssize_t vl = ::lgetxattr(path.c_str(), name.c_str(), value, sizeof value);
    out[name] = vl >= 0 ? std::string(value, static_cast<size_t>(vl)) : "<error>";
  }
  return out;
}

std::string read_symlink(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

namespace {

std::string describe_entry(const TreeEntry& e) {
  std::ostringstream s;
  s << "mode " << std::oct << e.mode << std::dec << " nlink " << e.nlink << " uid " << e.uid << " gid " << e.gid
    << " size " << e.size << " content '" << e.content << "' xattrs " << e.xattrs.size() << " ino " << e.ino
    << " mtime " << e.mtime.tv_sec << "." << e.mtime.tv_nsec << " ctime " << e.ctime.tv_sec << "." << e.ctime.tv_nsec;
  return s.str();
}

}  // namespace

Tree snapshot_tree(const std::string& root, bool with_identity) {
  Tree tree;
  walk_tree(root, [&](const std::string& r, const struct stat& st) {
    const std::string p = root + "/" + r;
    TreeEntry e;
    e.mode = st.st_mode;
    e.nlink = S_ISDIR(st.st_mode) ? 0 : st.st_nlink;  // directory link counts differ by design choice
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.size = S_ISDIR(st.st_mode) ? 0 : st.st_size;  // directory sizes are filesystem-specific
    if (S_ISREG(st.st_mode)) e.content = std::to_string(hash_file(p));
    if (S_ISLNK(st.st_mode)) e.content = read_symlink(p);
    // security.* labels are host-specific.
    if (!S_ISLNK(st.st_mode)) e.xattrs = read_xattrs(p, [](const std::string& n) { return n.starts_with("user."); });
    if (with_identity) {
      e.ino = st.st_ino;
      e.mtime = st.st_mtim;
      e.ctime = st.st_ctim;
      e.nlink = st.st_nlink;
      e.size = st.st_size;
    }
    tree[r] = e;
  });
  return tree;
}

std::string describe_tree_difference(const Tree& a, const Tree& b) {
  std::string out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out += "only in first: " + k + "\n";
    else if (!(it->second == v))
      out += k + ": " + describe_entry(v) + "  vs  " + describe_entry(it->second) + "\n";
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) out += "only in second: " + k + "\n";
  return out;
}

std::optional<MountEntry> mount_at(const std::string& dir) {
  std::optional<MountEntry> found;
  for (const MountTableEntry& m : read_mount_table())  // the last one mounted there is what shows
    if (m.mountpoint == dir) found = MountEntry{m.source, m.fstype, m.options};
  return found;
}

Volume::Volume(int members, const std::string& member_size) : member_size_(member_size) {
  for (int i = 0; i < members; ++i) members_.push_back(dir_ / ("m" + std::to_string(i)));
  mnt_ = dir_ / "mnt";
  ::mkdir(mnt_.c_str(), 0755);
}

Volume::~Volume() {
  if (mounted()) unmount();
  // A test that failed half-way may have left a dead mount: never delete through it.
  if (mount_at(mnt_)) run({"umount", "-l", mnt_});
}

RunResult Volume::mkfs(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {peregrine_bin(), "mkfs", "--size", member_size_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), members_.begin(), members_.end());
  return run(argv);
}

RunResult Volume::mount(const std::vector<std::string>& extra, const std::optional<std::vector<std::string>>& members) {
  std::string pid_file = dir_ / "daemon.pid";
  ::unlink(pid_file.c_str());
  std::vector<std::string> argv = {peregrine_bin(), "mount", "--pid-file", pid_file};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto& m = members ? *members : members_;
  argv.insert(argv.end(), m.begin(), m.end());
  argv.push_back(mnt_);
  RunResult r = run(argv);
  if (r.code == 0) {
    std::string text = read_file(pid_file);
    pid_ = static_cast<pid_t>(std::atoi(text.c_str()));
    EXPECT_GT(pid_, 0) << "pid file " << pid_file << " holds '" << text << "'";
  }
  return r;
}

int Volume::unmount() {
  if (!mounted()) return -1;
  RunResult r = run({"umount", mnt_});
  EXPECT_EQ(r.code, 0) << "umount " << mnt_ << ": " << r.describe();
  if (r.code != 0) {
    // Do not leave the daemon behind: SIGTERM unmounts too.
    ::kill(pid_, SIGTERM);
  }
  int status = wait_exit(pid_);
  pid_ = 0;
  wait_members_released();
  return status;
}

void Volume::wait_members_released() const { fstest::wait_members_released(members_); }

void wait_members_released(const std::vector<std::string>& members) {
  // A signal handler without SA_RESTART turns a lock that is never released
  // into EINTR (a failure) instead of a hang.
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) {};
  ::sigaction(SIGALRM, &sa, &old);
  ::alarm(120);
  for (const std::string& m : members) {
    Fd fd(::open(m.c_str(), O_RDONLY));
    if (!fd.ok()) continue;
    EXPECT_EQ(::flock(fd.get(), LOCK_EX), 0) << m << ": still locked after 120 s: " << std::strerror(errno);
  }
  ::alarm(0);
  ::sigaction(SIGALRM, &old, nullptr);
}

void Volume::kill9(const std::function<void()>& before_detach) {
  ASSERT_TRUE(mounted());
  ASSERT_EQ(::kill(pid_, SIGKILL), 0);
  int status = wait_exit(pid_);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  pid_ = 0;
  if (before_detach) before_detach();
  RunResult r = run({"fusermount3", "-u", "-z", mnt_});
  EXPECT_EQ(r.code, 0) << r.describe();
  wait_members_released();
}

pid_t Volume::member_holder() const {
  // /proc/PID/fd/N links name the open files; the daemon keeps its members open.
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  pid_t found = 0;
  while (struct dirent* e = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string fds = std::string("/proc/") + e->d_name + "/fd";
    DIR* d = ::opendir(fds.c_str());
    if (d == nullptr) continue;
    while (struct dirent* f = ::readdir(d)) {
      char target[PATH_MAX];
      ssize_t n = ::readlink((fds + "/" + f->d_name).c_str(), target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == members_[0]) found = pid;
    }
    ::closedir(d);
    if (found) break;
  }
  ::closedir(proc);
  return found;
}

void MountedTest::SetUp() {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  volume_.emplace();
  RunResult m = volume_->mkfs(mkfs_options());
  ASSERT_EQ(m.code, 0) << "mkfs: " << m.describe();
  RunResult r = volume_->mount(mount_options());
  ASSERT_EQ(r.code, 0) << "mount: " << r.describe();
  ASSERT_TRUE(mount_at(volume_->mountpoint())) << "peregrine mount returned 0 but nothing is mounted";
}

void MountedTest::TearDown() {
  if (!volume_) return;
  if (volume_->mounted()) {
    int status = volume_->unmount();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon wait status " << status;
  }
  volume_.reset();
}

void PrintTo(const Outcome& o, std::ostream* os) {
  *os << "{ret " << o.ret << ", errno " << o.err << (o.err ? std::string(" ") + std::strerror(o.err) : "") << "}";
}

void SideBySideTest::SetUp() {
  MountedTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  native_.emplace("peregrine-native");
}

void SideBySideTest::TearDown() {
  native_.reset();
  MountedTest::TearDown();
}

void SideBySideTest::expect_same_trees() {
  Tree a = snapshot_tree(native_->path(), false);
  Tree b = snapshot_tree(volume_->mountpoint(), false);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "native (first) vs peregrine (second):\n" << describe_tree_difference(a, b);
}

Outcome as_nobody(const std::function<Outcome()>& op, const std::vector<gid_t>& groups) {
  int p[2];
  if (::pipe(p) != 0) return outcome(-1);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    Outcome o{-1, EPERM};
    if (::setgroups(groups.size(), groups.data()) == 0 && ::setgid(kNobody) == 0 && ::setuid(kNobody) == 0) {
      errno = 0;
      o = op();
    }
    (void)!::write(p[1], &o, sizeof o);
    ::_exit(0);
  }
  ::close(p[1]);
  Outcome o{-1, -1};
  if (::read(p[0], &o, sizeof o) != sizeof o) o = Outcome{-1, -2};
  ::close(p[0]);
  int status;
  ::waitpid(pid, &status, 0);
  return o;
}

}  // namespace peregrine::fstest
