// Crash consistency as a standing test: rounds of a metadata-heavy writer
// (creates, writes, renames, unlinks, fsyncs, replacements by
// write-temp + fsync + rename + fsync-directory, appends with fsync) that
// is cut by kill -9 of the daemon at a random moment; then recovery (the
// next mount replays), a byte-for-byte check of everything the writer was
// told is durable, and `peregrine fsck -n`, which must be clean.
//
// The writer is a child process. Before each operation it logs its intent,
// and after the fsync that makes it durable returns it logs that, to a
// file outside the volume: the checker allows each name the state of its
// last durable operation or of any operation attempted after it, nothing
// else.
//
// A second run does the same with -o discard while another child runs
// fstrim (FITRIM) on the mount point without pause: discards race every
// delete, reuse and fsync, and may hit nothing recovery gives back.
//
// PEREGRINE_CRASH_ROUNDS (default 20) and PEREGRINE_CRASH_SEED (default:
// from the clock; printed) make a longer run and a reproduction;
// tools/crash-loop wraps both.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

constexpr int kSlots = 24;

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string slot_name(int slot) { return "s/slot" + std::to_string(slot); }
// The content of version v of a slot: its size and bytes follow from v.
size_t version_size(uint64_t v) { return 1 + mix(v) % (300 << 10); }
std::string version_content(uint64_t v) { return pattern(version_size(v), mix(v ^ 0x5555)); }
// The append log's bytes depend only on their offset, so any prefix checks.
std::string stream_bytes(uint64_t off, size_t len) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) {
    uint64_t o = off + i;
    s[i] = static_cast<char>(mix(o / 8) >> (8 * (o % 8)));
  }
  return s;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// ---- the writer (child process) ---------------------------------------------

struct Writer {
  std::string root;  // mount point
  int log_fd;        // outside the volume
  int pipe_fd;       // one byte per durable acknowledgement, for the parent
  std::mt19937_64 rng;
  uint64_t next_version;

  void note(const std::string& line) {
    std::string l = line + "\n";
    if (::write(log_fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(3);
  }
  void durable(const std::string& line) {
    note(line);
    char c = 'd';
    (void)!::write(pipe_fd, &c, 1);
  }
  std::string p(const std::string& rel) const { return root + "/" + rel; }
  static bool fsync_path(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY));
    if (!fd.ok()) fd = Fd(::open(path.c_str(), O_RDONLY));
    return fd.ok() && ::fsync(fd.get()) == 0;
  }
  [[noreturn]] static void fail() { _exit(2); }  // the daemon is gone: the round is over

  void replace(int slot) {
    uint64_t v = next_version++;
    note("I " + std::to_string(slot) + " " + std::to_string(v));
    std::string tmp = p("s/tmp" + std::to_string(slot));
    {
      Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
      if (!fd.ok() || !write_at(fd.get(), version_content(v), 0) || ::fsync(fd.get()) != 0) fail();
    }
    if (::rename(tmp.c_str(), p(slot_name(slot)).c_str()) != 0 || !fsync_path(p("s"))) fail();
    durable("D " + std::to_string(slot) + " " + std::to_string(v));
  }
  void remove(int slot) {
    note("I " + std::to_string(slot) + " -1");
    if (::unlink(p(slot_name(slot)).c_str()) != 0 && errno != ENOENT) fail();
    if (!fsync_path(p("s"))) fail();
    durable("D " + std::to_string(slot) + " -1");
  }
  void append() {
    Fd fd(::open(p("append.log").c_str(), O_WRONLY | O_CREAT, 0644));
    struct stat st;
    if (!fd.ok() || ::fstat(fd.get(), &st) != 0) fail();
    uint64_t off = static_cast<uint64_t>(st.st_size);
    size_t len = 1 + rng() % 20000;
    if (!write_at(fd.get(), stream_bytes(off, len), static_cast<off_t>(off)) || ::fsync(fd.get()) != 0) fail();
    durable("A " + std::to_string(off + len));
  }
  // Namespace churn nobody fsyncs: directories, renames across them,
  // unlinks, attribute changes. Only fsck judges what it leaves.
  void churn() {
    std::string d = "c/d" + std::to_string(rng() % 8);
    ::mkdir(p(d).c_str(), 0755);
    for (int i = 0; i < 4; ++i) {
      std::string f = d + "/f" + std::to_string(rng() % 16);
      switch (rng() % 5) {
        case 0:
        case 1: write_file(p(f), pattern(rng() % 9000, rng())); break;
        case 2:
          ::rename(p(f).c_str(), p("c/d" + std::to_string(rng() % 8) + "/g" + std::to_string(rng() % 16)).c_str());
          break;
        case 3: ::unlink(p(f).c_str()); break;
        case 4: ::chmod(p(f).c_str(), 0600 | (rng() % 0100)); break;
      }
    }
    if (rng() % 4 == 0) ::rmdir(p("c/d" + std::to_string(rng() % 8)).c_str());
  }

  [[noreturn]] void run() {
    ::mkdir(p("s").c_str(), 0755);
    ::mkdir(p("c").c_str(), 0755);
    if (!fsync_path(p("s")) || !fsync_path(root)) fail();
    for (;;) {
      int slot = static_cast<int>(rng() % kSlots);
      switch (rng() % 8) {
        case 0: remove(slot); break;
        case 1:
        case 2: append(); break;
        case 3:
        case 4: churn(); break;
        default: replace(slot); break;
      }
    }
  }
};

// ---- the checker --------------------------------------------------------------

constexpr int64_t kAbsent = -1;
constexpr int64_t kUnknown = -2;  // before the first round

struct Expectation {
  std::map<int, int64_t> slot_state;  // what the last check saw
  uint64_t append_len = 0;            // durable bytes of append.log
};

// Checks the mounted volume against the log of one round; on success
// updates `e` to what is there now.
void check_round(const Volume& v, const std::string& log_path, Expectation& e, const std::string& where) {
  std::map<int, std::set<int64_t>> allowed;
  for (int s = 0; s < kSlots; ++s) allowed[s] = {e.slot_state.count(s) ? e.slot_state[s] : kAbsent};
  uint64_t append_min = e.append_len;
  std::ifstream log(log_path);
  std::string kind;
  for (std::string line; std::getline(log, line);) {
    std::istringstream in(line);
    in >> kind;
    if (kind == "A") {
      in >> append_min;
      continue;
    }
    int slot;
    int64_t ver;
    in >> slot >> ver;
    if (kind == "I") allowed[slot].insert(ver);
    if (kind == "D") allowed[slot] = {ver};  // durable: nothing older may come back
  }
  for (int s = 0; s < kSlots; ++s) {
    std::string path = v.at(slot_name(s));
    struct stat st;
    int64_t seen = kUnknown;
    if (::stat(path.c_str(), &st) != 0) {
      seen = kAbsent;
    } else {
      std::string got = read_file(path);
      for (int64_t ver : allowed[s]) {
        if (ver >= 0 && got == version_content(static_cast<uint64_t>(ver))) seen = ver;
      }
    }
    std::string want;
    for (int64_t ver : allowed[s]) want += " " + std::to_string(ver);
    EXPECT_TRUE(allowed[s].count(seen)) << where << ": " << slot_name(s) << " is "
                                        << (seen == kAbsent ? "absent" : "not any allowed version")
                                        << "; allowed (-1 = absent):" << want;
    e.slot_state[s] = seen == kUnknown ? kAbsent : seen;
  }
  std::string app = read_file(v.at("append.log"));
  EXPECT_GE(app.size(), append_min) << where << ": append.log lost fsync'd bytes";
  std::string stream = stream_bytes(0, app.size());
  for (size_t i = 0; i < app.size(); ++i) {
    bool durable = i < append_min;
    if (app[i] != stream[i] && (durable || app[i] != '\0')) {
      ADD_FAILURE() << where << ": append.log byte " << i << " is wrong (" << (durable ? "fsync'd" : "not fsync'd")
                    << ")";
      break;
    }
  }
  // Bytes past the durable length that never made it (zeros) must not be
  // taken for durable ones by the next round: cut the file there.
  size_t good = app.size();
  for (size_t i = append_min; i < app.size(); ++i) {
    if (app[i] != stream[i]) {
      good = i;
      break;
    }
  }
  if (good < app.size()) {
    EXPECT_EQ(::truncate(v.at("append.log").c_str(), static_cast<off_t>(good)), 0);
  }
  e.append_len = good;
}

class CrashLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  void crash_loop(const std::vector<std::string>& options, bool trimmer);
};

// Runs the crash loop on a volume mounted with `options`. With `trimmer`,
// a second child sends FITRIM to the mount point over and over while the
// writer runs, until the kill ends both: discards then race the writer's
// deletes, reuses and fsyncs at every kill point.
void CrashLoopTest::crash_loop(const std::vector<std::string>& options, bool trimmer) {
  const uint64_t rounds = env_u64("PEREGRINE_CRASH_ROUNDS", 20);
  const uint64_t seed =
      env_u64("PEREGRINE_CRASH_SEED",
              static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007);
  std::printf("crash loop: %llu rounds, seed %llu (PEREGRINE_CRASH_SEED=%llu reproduces)\n",
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  RecordProperty("seed", std::to_string(seed));
  Volume v(4, "64M");
  ASSERT_EQ(v.mkfs().code, 0);
  ASSERT_EQ(v.mount(options).code, 0);
  Expectation e;
  uint64_t next_version = 1;
  for (uint64_t round = 0; round < rounds && !HasFailure(); ++round) {
    const std::string where = "seed " + std::to_string(seed) + " round " + std::to_string(round);
    std::mt19937_64 rng(mix(seed * 1000003 + round));
    const uint64_t kill_after = 1 + rng() % 40;  // durable acknowledgements before kill -9
    const std::string log_path = v.dir() + "/writer.log";
    Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644));
    int acks[2];
    ASSERT_EQ(::pipe2(acks, O_CLOEXEC), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(acks[0]);
      Writer w{v.mountpoint(), log.get(), acks[1], std::mt19937_64(rng()), next_version};
      w.run();
    }
    ::close(acks[1]);
    Fd ack_fd(acks[0]);
    pid_t trim_child = 0;
    if (trimmer) {
      trim_child = ::fork();
      ASSERT_GE(trim_child, 0);
      if (trim_child == 0) {
        // One descriptor of the mount root, until the kill makes its
        // ioctls fail (ENOTCONN). Never opened again: after the kill the
        // path is the bare directory under the mount, of another filesystem.
        int fd = ::open(v.mountpoint().c_str(), O_RDONLY | O_DIRECTORY);
        if (fd < 0) _exit(2);
        for (;;) {
          fstrim_range r{0, UINT64_MAX, 0};
          // The kill ends a request in flight with ECONNABORTED (or, on the
          // io-uring transport, ECANCELED), later ones with ENOTCONN.
          if (::ioctl(fd, FITRIM, &r) != 0)
            // EINTR too: seen once on io-uring (kernel 6.18) for a FITRIM
            // the kill ended, the trim child having no signal of its own.
            _exit(errno == ENOTCONN || errno == ECONNABORTED || errno == ECANCELED || errno == EINTR ? 0 : errno);
        }
      }
    }
    uint64_t seen = 0;
    char c;
    while (seen < kill_after && ::read(ack_fd.get(), &c, 1) == 1) ++seen;
    ASSERT_EQ(seen, kill_after) << where << ": the writer stopped early (see its exit status)";
    // The writer goes before the dead mount is detached: its churn ignores
    // errors and goes on, and after the detach its next append would create
    // append.log in the bare directory beneath, fsync it there and log it
    // as durable.
    int status = 0;
    v.kill9([&] {
      ::kill(child, SIGKILL);
      EXPECT_EQ(::waitpid(child, &status, 0), child);
      if (trim_child > 0) {
        EXPECT_EQ(::waitpid(trim_child, &status, 0), trim_child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << where << ": FITRIM failed otherwise than by the kill: " << std::strerror(WEXITSTATUS(status));
      }
    });
    log.reset();
    next_version += 1000000;  // versions of the next writer never repeat this one's

    RunResult m = v.mount(options);
    ASSERT_EQ(m.code, 0) << where << ": mount after kill -9: " << m.describe();
    check_round(v, log_path, e, where);
    // Clean on the recovered volume, after the replay's own checkpoint.
    int st = v.unmount();
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << where << ": " << st;
    std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
    argv.insert(argv.end(), v.members().begin(), v.members().end());
    RunResult f = run(argv);
    v.wait_members_released();
    ASSERT_EQ(f.code, 0) << where << ": fsck -n after recovery: " << f.describe();
    ASSERT_EQ(v.mount(options).code, 0) << where;
  }
  int st = v.unmount();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
}

TEST_F(CrashLoopTest, FsyncedStateSurvivesKill9AtRandomMoments) { crash_loop({}, false); }

// The same with -o discard and fstrim running all the while: no discard
// ever hits a block that recovery gives back to a file (a free whose record
// was not durable at the kill) or a block the writer reused.
TEST_F(CrashLoopTest, WithOnlineDiscardAndFstrimFsyncedStateSurvives) { crash_loop({"-o", "discard"}, true); }

}  // namespace
}  // namespace peregrine::fstest
