// Crash consistency as a standing test: rounds of a metadata-heavy writer
// (creates, writes, renames, unlinks, fsyncs, replacements by
// write-temp + fsync + rename + fsync-directory, the temp written through
// a shared mapping and msync'd half the time, appends with fsync) that
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
// The power_cut runs cut power instead: the members keep undo logs
// (PEREGRINE_TEST_POWER_CUT, backend/volatile_cache_device.h) and behave
// like drives with a volatile write cache; the daemon dies as a seeded
// member write or flush starts (inside a journal commit, a checkpoint, a data
// write, the background commit: whatever issues it) or at the kill, and
// before the next mount every write no flush covered is kept, lost or torn
// at a 512-byte or 4 KiB boundary, from the seed. Both cache modes.
//
// PEREGRINE_CRASH_ROUNDS (default 20; power cuts: PEREGRINE_POWER_CUT_ROUNDS,
// default 64, so 128 a cache mode over the two transports' runs, each with
// a seed of its own) and PEREGRINE_CRASH_SEED (default: from the clock; printed)
// make a longer run and a reproduction; tools/crash-loop wraps them.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest-spi.h>

#include "fs_test_util.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

constexpr int kSlots = 24;

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

// A churn file's bytes: 16-byte records, each the seed of the write that
// made the file and the record's index. Whatever the churn left (renamed,
// chmod'ed, a prefix of the write) checks, and bytes of another write or
// file (another seed or index) show.
std::string churn_content(size_t size, uint64_t seed) {
  std::string s(size + 16, '\0');
  for (uint64_t r = 0; r * 16 < size; ++r) {
    std::memcpy(&s[r * 16], &seed, 8);
    std::memcpy(&s[r * 16 + 8], &r, 8);
  }
  s.resize(size);
  return s;
}

// The first byte of `got` that one churn write did not put there, or
// got.size(). With `zero_blocks`, whole 4 KiB blocks of zeros pass: on the
// page cache's mount a writeback answered before its IO may not have
// landed, and its blocks read as zeros (write_behind.h).
size_t churn_mismatch(const std::string& got, bool zero_blocks) {
  std::optional<uint64_t> seed;
  for (size_t blk = 0; blk < got.size(); blk += 4096) {
    const size_t end = std::min(got.size(), blk + 4096);
    if (zero_blocks && got.find_first_not_of('\0', blk) >= end) continue;
    if (!seed && end - blk >= 8) {
      uint64_t v;
      std::memcpy(&v, &got[blk], 8);
      seed = v;
    }
    if (!seed) continue;  // under 8 bytes in all: nothing to tell the write by
    const std::string want = churn_content(end, *seed);
    for (size_t i = blk; i < end; ++i)
      if (got[i] != want[i]) return i;
  }
  return got.size();
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
  // Writes `content` at the start of fd and makes it durable: write(2) and
  // fsync, or (mapped) through a shared mapping and msync(MS_SYNC), which
  // writes the dirty pages back and sends the daemon an fdatasync. A
  // mapping whose daemon is gone may raise SIGBUS: that ends the writer
  // as fail() would.
  static bool write_durably(int fd, const std::string& content, bool mapped) {
    if (!mapped) return write_at(fd, content, 0) && ::fsync(fd) == 0;
    if (::ftruncate(fd, static_cast<off_t>(content.size())) != 0) return false;
    void* m = ::mmap(nullptr, content.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return false;
    std::memcpy(m, content.data(), content.size());
    const bool ok = ::msync(m, content.size(), MS_SYNC) == 0;
    ::munmap(m, content.size());
    return ok;
  }

  void replace(int slot) {
    uint64_t v = next_version++;
    const bool mapped = rng() % 2 == 0;
    note("I " + std::to_string(slot) + " " + std::to_string(v));
    std::string tmp = p("s/tmp" + std::to_string(slot));
    {
      // O_RDWR: a shared writable mapping needs it.
      Fd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
      if (!fd.ok() || !write_durably(fd.get(), version_content(v), mapped)) fail();
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
        case 1: write_file(p(f), churn_content(rng() % 9000, rng())); break;
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
void check_round(const Volume& v, const std::string& log_path, Expectation& e, const std::string& where,
                 bool zero_blocks) {
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
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(v.at("c"), ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string got = read_file(it->path());
    const size_t bad = churn_mismatch(got, zero_blocks);
    EXPECT_EQ(bad, got.size()) << where << ": " << it->path().string() << " (" << got.size()
                               << " bytes) holds bytes its write did not put there, from byte " << bad << " ("
                               << (got.find_first_not_of('\0', bad) == std::string::npos ? "zeros to the end"
                                                                                         : "not all zeros")
                               << ")";
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
  void crash_loop(const std::vector<std::string>& options, bool trimmer, bool power_cut = false);
  // Power cuts on fuse.cache=direct with PEREGRINE_TEST_PLANT=plant, until
  // the first failure (at most PEREGRINE_POWER_CUT_ROUNDS, default 300),
  // which must be a data check's: what the planted bug breaks.
  void expect_planted_bug_caught(const char* plant);
  // A failure so far, also one a test intercepts (the planted bug's).
  bool failed() const { return HasFailure() || (intercepted_ != nullptr && intercepted_->size() > 0); }

  const ::testing::TestPartResultArray* intercepted_ = nullptr;
};

// Runs the crash loop on a volume mounted with `options`. With `trimmer`,
// a second child sends FITRIM to the mount point over and over while the
// writer runs, until the kill ends both: discards then race the writer's
// deletes, reuses and fsyncs at every kill point.
void CrashLoopTest::crash_loop(const std::vector<std::string>& options, bool trimmer, bool power_cut) {
  const uint64_t rounds =
      power_cut ? env_u64("PEREGRINE_POWER_CUT_ROUNDS", 64) : env_u64("PEREGRINE_CRASH_ROUNDS", 20);
  const uint64_t seed = crash_seed("crash loop", rounds);
  Volume v(4, "64M");
  ASSERT_EQ(v.mkfs().code, 0);
  const bool page_cache =
      std::find(options.begin(), options.end(), "fuse.cache=direct") == options.end();
  // Where the next round's daemon dies by itself (power cuts): at one of
  // the first 120 member writes of the round's mount, or only at the kill
  // (kill_at_io_of; armed after the last round, it once cut itself in its
  // unmount's checkpoint at the end of a 1,000-cut run).
  auto kill_at_io = [&](uint64_t round) { return kill_at_io_of(seed, round, rounds, 120); };
  auto mount_round = [&](uint64_t round) {
    return power_cut ? mount_with_power_cut(v, options, kill_at_io(round)) : v.mount(options);
  };
  ASSERT_EQ(mount_round(0).code, 0);
  Expectation e;
  PowerCutOutcome cuts;
  uint64_t self_cut_rounds = 0;  // the daemon cut its own power at kill_at_io
  uint64_t next_version = 1;
  uint64_t cut_rounds = 0;  // rounds that ended in a cut
  for (uint64_t round = 0; round < rounds && !failed(); ++round) {
    ++cut_rounds;
    const std::string where = "seed " + std::to_string(seed) + " round " + std::to_string(round);
    std::mt19937_64 rng(mix(seed * 1000003 + round));
    const uint64_t kill_after = 1 + rng() % 40;  // durable acknowledgements before kill -9
    const std::string log_path = v.dir() + "/writer.log";
    Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644));
    Fd ack_fd;
    const pid_t child = fork_with_acks(
        [&](int acks) {
          Writer w{v.mountpoint(), log.get(), acks, std::mt19937_64(rng()), next_version};
          w.run();
        },
        &ack_fd);
    ASSERT_GT(child, 0) << std::strerror(errno);
    pid_t trim_child = 0;
    if (trimmer) {
      trim_child = ::fork();
      ASSERT_GE(trim_child, 0);
      if (trim_child == 0) {
        // One descriptor of the mount root, until the kill makes its
        // ioctls fail (ENOTCONN). Never opened again: after the kill the
        // path is the bare directory under the mount, of another filesystem.
        // The kill ends a request in flight with ECONNABORTED (or, on the
        // io-uring transport, ECANCELED), later ones with ENOTCONN. EINTR
        // too: seen once on io-uring (kernel 6.18) for a FITRIM the kill
        // ended, the trim child having no signal of its own.
        auto gone = [](int e) { return e == ENOTCONN || e == ECONNABORTED || e == ECANCELED || e == EINTR; };
        // A daemon that cut its own power may be gone before this opens.
        int fd = ::open(v.mountpoint().c_str(), O_RDONLY | O_DIRECTORY);
        if (fd < 0) _exit(gone(errno) ? 0 : errno);
        for (;;) {
          fstrim_range r{0, UINT64_MAX, 0};
          if (::ioctl(fd, FITRIM, &r) != 0) _exit(gone(errno) ? 0 : errno);
        }
      }
    }
    uint64_t seen = 0;
    char c;
    while (seen < kill_after && ::read(ack_fd.get(), &c, 1) == 1) ++seen;
    // A daemon that cut its own power ended the writer early.
    if (!power_cut) {
      ASSERT_EQ(seen, kill_after) << where << ": the writer stopped early (see its exit status)";
    }
    if (seen < kill_after) ++self_cut_rounds;
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
    if (power_cut) {
      PowerCutOutcome o = cut_power(v, mix(seed ^ (round << 20)));
      cuts.pending += o.pending;
      cuts.kept += o.kept;
      cuts.lost += o.lost;
      cuts.torn += o.torn;
    }

    RunResult m = v.mount(options);
    ASSERT_EQ(m.code, 0) << where << ": mount after kill -9: " << m.describe();
    check_round(v, log_path, e, where, page_cache);
    // Clean on the recovered volume, after the replay's own checkpoint.
    ASSERT_EQ(unmount_and_fsck(v), "") << where;
    ASSERT_EQ(mount_round(round + 1).code, 0) << where;
  }
  if (power_cut) {
    std::printf("power cuts: %llu (%llu at a member IO), member writes no flush covered: %llu (kept %llu, lost %llu, "
                "torn %llu)\n",
                static_cast<unsigned long long>(cut_rounds), static_cast<unsigned long long>(self_cut_rounds),
                static_cast<unsigned long long>(cuts.pending),
                static_cast<unsigned long long>(cuts.kept), static_cast<unsigned long long>(cuts.lost),
                static_cast<unsigned long long>(cuts.torn));
    // A harness that never loses anything tests nothing (asked of runs long
    // enough to lose something: 125 cuts lost or tore 40 to 70 writes;
    // a short tools/crash-loop run may lose none).
    if (cut_rounds >= 50) {
      EXPECT_GT(cuts.lost + cuts.torn, 0u);
    }
  }
  int st = v.unmount();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
}

TEST_F(CrashLoopTest, FsyncedStateSurvivesKill9AtRandomMoments) { crash_loop({}, false); }

// The same with -o discard and fstrim running all the while: no discard
// ever hits a block that recovery gives back to a file (a free whose record
// was not durable at the kill) or a block the writer reused.
TEST_F(CrashLoopTest, WithOnlineDiscardAndFstrimFsyncedStateSurvives) { crash_loop({"-o", "discard"}, true); }

void CrashLoopTest::expect_planted_bug_caught(const char* plant) {
  ::testing::TestPartResultArray caught;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &caught);
    intercepted_ = &caught;
    ::setenv("PEREGRINE_TEST_PLANT", plant, 1);
    const char* rounds = std::getenv("PEREGRINE_POWER_CUT_ROUNDS");
    if (!rounds) ::setenv("PEREGRINE_POWER_CUT_ROUNDS", "300", 1);
    crash_loop({"-o", "fuse.cache=direct"}, false, true);
    if (!rounds) ::unsetenv("PEREGRINE_POWER_CUT_ROUNDS");
    ::unsetenv("PEREGRINE_TEST_PLANT");
    intercepted_ = nullptr;
  }
  ASSERT_GT(caught.size(), 0) << "the power cuts missed the planted bug " << plant;
  // Caught by what the bug breaks (data a record claims, missing or
  // foreign), not by anything else going wrong on the way.
  const std::string first = caught.GetTestPartResult(0).message();
  const bool by_data = first.find("holds bytes its write did not put there") != std::string::npos ||
                       first.find("append.log") != std::string::npos ||
                       first.find("not any allowed version") != std::string::npos;
  EXPECT_TRUE(by_data) << "the first failure was not the planted bug's: " << first;
  std::printf("caught: %s\n", first.c_str());
}

// The harness catches a bug planted on purpose: commits that mark data
// written before that data is flushed. It took 2 to 93 cuts in 16 runs.
TEST_F(CrashLoopTest, power_cut_CatchesAJournalRecordWrittenBeforeItsDataIsFlushed) {
  expect_planted_bug_caught("journal_without_data_flush");
}

// The second planted bug: space a change frees is discarded on the
// members before the record that frees it is durable. A cut that loses
// that record gives the space back to its file (a replacement by rename,
// an unlink, a truncate), whose fsync'd bytes the discard turned to zeros.
// It took 1 to 14 cuts in 12 runs.
TEST_F(CrashLoopTest, power_cut_CatchesADiscardIssuedBeforeItsFreeIsDurable) {
  expect_planted_bug_caught("discard_before_free_durable");
}

// Power cuts (see the top): the page cache's mount, and fuse.cache=direct,
// whose writes reach the members as the program makes them.
TEST_F(CrashLoopTest, power_cut_FsyncedStateSurvivesInTheDefaultMount) { crash_loop({}, false, true); }
// Power cuts with -o discard and fstrim running all the while: a cut may
// lose the record that freed space whose discard had not started, never
// one whose discard had (the allocator discards only what a flush made
// durable), and fsck stays clean.
TEST_F(CrashLoopTest, power_cut_WithOnlineDiscardAndFstrimFsyncedStateSurvives) {
  crash_loop({"-o", "discard"}, true, true);
}
TEST_F(CrashLoopTest, power_cut_FsyncedStateSurvivesWithoutThePageCache) {
  crash_loop({"-o", "fuse.cache=direct"}, false, true);
}

}  // namespace
}  // namespace peregrine::fstest
