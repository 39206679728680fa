// The FUSE transport: the one this run asks for is the one in use; on
// io-uring the requests arrive on the rings (their counters move and no
// request but INIT, FORGET, INTERRUPT and DESTROY comes over /dev/fuse);
// `auto` on a kernel without FUSE over io_uring falls back to classic,
// says why in the log and serves data; `io-uring` there refuses to mount.
// A ring thread answering one request at a time moves to its queue's CPU,
// and sends its replies at SCHED_IDLE (fuse.ring_yield_ns; direct reads and
// writes only alone and quickly made).
// On members with latency, a lone read or write is reaped by the thread it
// arrived on (engine.inline_poll_us), on either transport.
// The kernel's answer is stood in for by PEREGRINE_FUSE_URING_PARAM, a file
// the daemon reads instead of the fuse module's enable_uring parameter.
#include <fcntl.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <iterator>
#include <numeric>
#include <sstream>
#include <thread>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using json = nlohmann::json;

json stats_of(const std::string& mountpoint) {
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(mountpoint.c_str(), "user.peregrine.stats", buf.data(), buf.size());
  if (n <= 0) return json();
  return json::parse(buf.substr(0, static_cast<size_t>(n)));
}

json transport_of(const std::string& mountpoint) {
  json s = stats_of(mountpoint);
  return s.is_object() ? s.at("transport") : json();
}

uint64_t ring_total(const json& t) {
  auto rings = t.at("ring_requests").get<std::vector<uint64_t>>();
  return std::accumulate(rings.begin(), rings.end(), uint64_t{0});
}

// 64 O_DIRECT block writes, then reads of the same blocks: 128 requests
// that carry data, checked byte for byte.
void direct_round_trip(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  void* mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, 4096, 4096), 0);
  auto* block = static_cast<char*>(mem);
  for (int i = 0; i < 64; ++i) {
    std::string p = pattern(4096, 100 + i);
    std::memcpy(block, p.data(), 4096);
    ASSERT_EQ(::pwrite(fd.get(), block, 4096, off_t{i} * 4096), 4096) << std::strerror(errno);
  }
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(::pread(fd.get(), block, 4096, off_t{i} * 4096), 4096) << std::strerror(errno);
    ASSERT_EQ(std::string(block, 4096), pattern(4096, 100 + i)) << "block " << i;
  }
  std::free(mem);
}

std::string write_param_file(const TempDir& dir, const char* value) {
  std::string path = dir / "enable_uring";
  EXPECT_TRUE(write_file(path, std::string(value) + "\n"));
  return path;
}

using TransportTest = MountedTest;

TEST_F(TransportTest, TheRunsTransportIsInUse) {
  if (test_transport().empty()) GTEST_SKIP() << "run through ctest, which sets PEREGRINE_TEST_TRANSPORT";
  json before = transport_of(volume_->mountpoint());
  ASSERT_TRUE(before.is_object()) << "the stats document has no transport";
  EXPECT_EQ(before.at("name").get<std::string>(), test_transport());
  direct_round_trip(at("f"));
  json after = transport_of(volume_->mountpoint());
  if (test_transport() == "io-uring") {
    EXPECT_GE(ring_total(after) - ring_total(before), 128u) << "the reads and writes did not arrive on the rings";
    // 64 aligned writes and 64 reads: the rings decode them themselves,
    // without libfuse (docs/transport.md).
    EXPECT_GE(after.at("ring_data_requests").get<uint64_t>() - before.at("ring_data_requests").get<uint64_t>(), 128u)
        << after.dump();
    EXPECT_EQ(after.at("dev_fuse_requests").get<uint64_t>(), 0u)
        << "requests other than INIT, FORGET, INTERRUPT and DESTROY came over /dev/fuse";
  } else {
    EXPECT_TRUE(after.at("ring_requests").empty());
  }
}

// Members with 100 us of latency, one request at a time, a poll budget
// far above it: the thread that received each request dispatches it
// inline and waits for the member itself (a ring thread on io-uring, a
// worker on classic), so the drives' `polled` counters grow; every block
// reads back as written.
TEST_F(TransportTest, LoneIoOnMembersWithLatencyIsReapedWhereItArrived) {
  if (test_transport().empty()) GTEST_SKIP() << "run through ctest, which sets PEREGRINE_TEST_TRANSPORT";
  ASSERT_EQ(volume_->unmount(), 0);
  ::setenv("PEREGRINE_BENCH_SHAPE", "100:4:100000:1000", 1);
  RunResult slow = volume_->mount({"-o", "engine.inline_poll_us=1000"});
  ::unsetenv("PEREGRINE_BENCH_SHAPE");
  ASSERT_EQ(slow.code, 0) << slow.describe();
  direct_round_trip(at("lone"));
  const json stats = stats_of(volume_->mountpoint());
  uint64_t polled = 0;
  for (const json& d : stats.at("drives")) polled += d.at("polled").get<uint64_t>();
  EXPECT_GT(polled, 0u) << "no lone IO was reaped by the thread it arrived on: " << stats.dump();
}

// The CPUs a thread of `pid` named `name` may run on (Cpus_allowed_list),
// or "" if there is no such thread.
std::string cpus_of_thread(pid_t pid, const std::string& name) {
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(task_dir)) {
    std::string comm = read_file(task.path() / "comm");
    if (comm != name + "\n") continue;
    std::string status = read_file(task.path() / "status");
    size_t at = status.find("Cpus_allowed_list:");
    if (at == std::string::npos) return "";
    size_t start = status.find_first_not_of(" \t", at + 18);
    return status.substr(start, status.find('\n', start) - start);
  }
  return "";
}

// fuse.pin_rings = false: a ring thread that answers its requests itself,
// one at a time (getxattr from one thread: never cached by the kernel),
// moves to its queue's CPU (transport/ring_placement.h).
TEST_F(TransportTest, RingAnsweringOneRequestAtATimeMovesToItsQueuesCpu) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  const int cpus = get_nprocs();
  if (cpus < 2) GTEST_SKIP() << "one CPU: pinned and free are the same";
  ASSERT_TRUE(write_file(at("x"), "data"));
  ASSERT_EQ(::setxattr(at("x").c_str(), "user.k", "v", 1, 0), 0) << std::strerror(errno);
  char value[8];
  // Each request goes to the ring of the CPU this thread is on; whichever
  // ring gets most of them sees far more light rounds than it needs.
  for (int i = 0; i < 400; ++i) ASSERT_EQ(::getxattr(at("x").c_str(), "user.k", value, sizeof value), 1);
  std::vector<std::string> pinned;
  for (int q = 0; q < cpus; ++q) {
    std::string allowed = cpus_of_thread(volume_->daemon_pid(), "pg-ring" + std::to_string(q));
    if (allowed == std::to_string(q)) pinned.push_back("pg-ring" + std::to_string(q));
  }
  EXPECT_FALSE(pinned.empty()) << "no ring thread runs on its queue's CPU alone";
}

// Each ring thread of `pid`: its name, its state (R running or runnable,
// S sleeping, ...) and its scheduling policy (sched(7)), read together
// from one /proc/PID/task/TID/stat.
struct RingThreadState {
  std::string name;
  char state;
  int policy;
};
std::vector<RingThreadState> ring_threads(pid_t pid) {
  std::vector<RingThreadState> out;
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(task_dir)) {
    std::string stat = read_file(task.path() / "stat");
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string name = stat.substr(open + 1, close - open - 1);
    if (name.rfind("pg-ring", 0) != 0) continue;
    // After the name: field 3 (state) ... field 41 (policy).
    std::istringstream rest(stat.substr(close + 2));
    std::vector<std::string> fields{std::istream_iterator<std::string>(rest), {}};
    if (fields.size() < 39) continue;
    out.push_back({name, fields[0][0], std::stoi(fields[38])});
  }
  return out;
}

// 512-byte reads of a file, start to end, one after the other, checked
// against what was written: the lone requests fuse.ring_yield_ns is for.
constexpr size_t kSmallReads = 64 * 4096 / 512;
void small_reads_of(const std::string& path) {
  const std::string data = pattern(64 * 4096, 7);
  ASSERT_TRUE(write_file(path, data));
  Fd fd(::open(path.c_str(), O_RDONLY));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  char buf[512];
  for (size_t off = 0; off < data.size(); off += sizeof buf) {
    ASSERT_EQ(::pread(fd.get(), buf, sizeof buf, static_cast<off_t>(off)), 512) << std::strerror(errno);
    ASSERT_EQ(std::string(buf, sizeof buf), data.substr(off, sizeof buf)) << "at " << off;
  }
}

// Whether a thread of this process (and so the daemon, started by it with
// the same rights) may come back from SCHED_IDLE; tried on a thread of its
// own.
bool may_leave_sched_idle() {
  bool ok = false;
  std::thread probe([&ok] {
    sched_param none{};
    ok = sched_setscheduler(0, SCHED_IDLE, &none) == 0 && sched_setscheduler(0, SCHED_OTHER, &none) == 0;
  });
  probe.join();
  return ok;
}

// Runs `work` on a thread of its own, held to one CPU of those this
// process may use: its requests then all go to that CPU's ring.
void on_one_cpu(const std::function<void()>& work) {
  std::thread worker([&work] {
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(0, sizeof one, &one);
        break;
      }
    }
    work();
  });
  worker.join();
}

// fuse.ring_yield_ns: a ring thread answering lone requests on its queue's
// CPU sends those replies at SCHED_IDLE (transport/reply_yield.h), and is
// back at its own policy before it waits again: a ring thread that is
// asleep is never at SCHED_IDLE. (One that is runnable may be: preempted
// by the caller it just woke, as meant.) The bound is set at its maximum,
// 1 ms, so that every lone reply qualifies however fast the machine.
// How many replies are lowered depends on the scheduler (the ring first
// moves to its queue's CPU; a reply that waited over 1 ms for its CPU
// stops lowering for a while), so the test reads in passes until one is,
// with the reader held to one CPU so that one ring sees every request;
// the share that is lowered is the benchmarks' business.
TEST_F(TransportTest, LoneRepliesAreSentAtIdleAndRingThreadsSleepAtTheirPolicy) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  if (!may_leave_sched_idle()) GTEST_SKIP() << "no CAP_SYS_NICE: the daemon never lowers a thread";
  ASSERT_EQ(volume_->unmount(), 0);
  // Small reads that reach the daemon: fuse.cache = direct (the default
  // mount answers them from the page cache).
  RunResult r = volume_->mount({"-o", "fuse.ring_yield_ns=1000000,fuse.cache=direct"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const uint64_t before = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>();
  uint64_t yielded = 0;
  constexpr int kPasses = 16;
  int passes = 0;
  on_one_cpu([&] {
    while (yielded == 0 && passes < kPasses && !::testing::Test::HasFailure()) {
      small_reads_of(at("f"));
      ++passes;
      yielded = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>() - before;
    }
  });
  EXPECT_GT(yielded, 0u) << "no reply lowered in " << passes << " passes of " << kSmallReads
                         << " small reads one after the other";
  auto threads = ring_threads(volume_->daemon_pid());
  ASSERT_FALSE(threads.empty());
  for (const auto& t : threads) {
    if (t.state != 'R') {
      EXPECT_EQ(t.policy, SCHED_OTHER) << t.name << " asleep (" << t.state << ") lowered";
    }
  }
}

// fuse.ring_yield_ns bounds the lowering of direct reads and writes only:
// a reply about names, attributes or page-cache IO is lowered however
// long the ring took over it (an unpacked file's chown, chmod and utimes,
// a walk's lookups). With a bound of 1 ns no direct read can be lowered
// (at most one reply in that span is: the statistics request before it,
// lowered after it counted), while a run of xattr lookups, one after the
// other from one CPU, must be: in passes until one is, as above.
TEST_F(TransportTest, RepliesOtherThanDirectDataAreLoweredWhateverTheirLength) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  if (!may_leave_sched_idle()) GTEST_SKIP() << "no CAP_SYS_NICE: the daemon never lowers a thread";
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount({"-o", "fuse.ring_yield_ns=1,fuse.cache=direct"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const std::string data = pattern(64 * 4096, 11);
  ASSERT_TRUE(write_file(at("f"), data));
  Fd fd(::open(at("f").c_str(), O_RDONLY));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  const uint64_t before_reads = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>();
  on_one_cpu([&] {
    char buf[512];
    for (size_t off = 0; off < data.size(); off += sizeof buf) {
      ASSERT_EQ(::pread(fd.get(), buf, sizeof buf, static_cast<off_t>(off)), 512) << std::strerror(errno);
      ASSERT_EQ(std::string(buf, sizeof buf), data.substr(off, sizeof buf)) << "at " << off;
    }
  });
  const uint64_t after_reads = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>();
  EXPECT_LE(after_reads - before_reads, 1u) << "direct reads lowered although each took over 1 ns";

  uint64_t yielded = 0;
  constexpr int kPasses = 16;
  constexpr int kLookups = 256;
  int passes = 0;
  on_one_cpu([&] {
    char value[16];
    while (yielded == 0 && passes < kPasses && !::testing::Test::HasFailure()) {
      for (int i = 0; i < kLookups; ++i) {
        ASSERT_EQ(::getxattr(at("f").c_str(), "user.none", value, sizeof value), -1);
        ASSERT_EQ(errno, ENODATA) << std::strerror(errno);
      }
      ++passes;
      yielded = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>() - after_reads;
    }
  });
  EXPECT_GT(yielded, 0u) << "no reply lowered in " << passes << " passes of " << kLookups
                         << " xattr lookups one after the other";
}

// A reply another thread makes for a ring's request (here a blocking-op
// thread's fsync of a directory) is lowered as the ring's own are: else
// the caller, woken while the ring thread runs, goes to the other CPU at
// every such reply, and a database's commits crossed between CPUs one
// after the other. Each pass counts the replies lowered over a run of
// fsyncs of a directory with nothing left to write, each one FSYNCDIR
// request, which a ring always hands to a blocking-op thread; more than
// the statistics request's own (at most one) must be, in some pass, as
// above.
TEST_F(TransportTest, RepliesBlockingOpThreadsMakeAreLoweredToo) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  if (!may_leave_sched_idle()) GTEST_SKIP() << "no CAP_SYS_NICE: the daemon never lowers a thread";
  const std::string data = pattern(3 * 4096 + 100, 12);
  ASSERT_EQ(::mkdir(at("d").c_str(), 0755), 0) << std::strerror(errno);
  ASSERT_TRUE(write_file(at("d/db"), data));
  Fd fd(::open(at("d").c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
  uint64_t lowered = 0;
  constexpr int kPasses = 16;
  constexpr int kFsyncs = 64;
  int passes = 0;
  on_one_cpu([&] {
    while (lowered <= 1 && passes < kPasses && !::testing::Test::HasFailure()) {
      const uint64_t before = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>();
      for (int i = 0; i < kFsyncs; ++i) ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
      lowered = transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>() - before;
      ++passes;
    }
  });
  EXPECT_GT(lowered, 1u) << "no directory fsync's reply lowered in " << passes << " passes of " << kFsyncs
                         << " fsyncs one after the other";
  EXPECT_EQ(read_file(at("d/db")), data);
}

// A short fsync that is its ring's only request (a database's commit: a
// frame appended, then fsync) runs on the ring thread, without the
// hand-off to a blocking-op thread (uring_transport.h), and what it made
// durable is there after the daemon is killed. From one CPU, so that one
// ring sees every request, until one ran so (a request of the kernel's
// own, a writeback, may share a round).
TEST_F(TransportTest, ALoneShortFsyncRunsOnItsRingAndItsDataOutlivesAKill) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  const uint64_t before = transport_of(volume_->mountpoint()).at("ring_inline_fsyncs").get<uint64_t>();
  std::string expected;
  uint64_t ran = 0;
  on_one_cpu([&] {
    Fd fd(::open(at("wal").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
    ASSERT_TRUE(fd.ok()) << std::strerror(errno);
    for (int i = 0; i < 64 && ran == 0 && !::testing::Test::HasFailure(); ++i) {
      const std::string frame = pattern(4096 + 24, 20 + i);  // a WAL frame: a page and its header
      ASSERT_EQ(::write(fd.get(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()))
          << std::strerror(errno);
      ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
      expected += frame;
      ran = transport_of(volume_->mountpoint()).at("ring_inline_fsyncs").get<uint64_t>() - before;
    }
  });
  EXPECT_GT(ran, 0u) << "no fsync run on its ring in " << expected.size() / (4096 + 24) << " appends and fsyncs";
  volume_->kill9();
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << "mount after kill -9: " << r.describe();
  EXPECT_TRUE(read_file(at("wal")) == expected) << "fsync'd frames lost or changed";
}

TEST_F(TransportTest, RingYieldZeroKeepsEveryReplyAtTheThreadsPolicy) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount({"-o", "fuse.ring_yield_ns=0"});
  ASSERT_EQ(r.code, 0) << r.describe();
  small_reads_of(at("f"));
  EXPECT_EQ(transport_of(volume_->mountpoint()).at("ring_yielded_replies").get<uint64_t>(), 0u);
}

// A fresh volume, mounted in the foreground with `transport` on a kernel
// that (as far as the daemon can tell) has the enable_uring parameter off.
class TransportChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = mount_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(volume_.mkfs().code, 0);
  }
  bool mount_with_uring_off(const std::string& transport) {
    std::string param = write_param_file(param_dir_, "N");
    return mount_foreground(volume_, {"-o", "fuse.transport=" + transport}, &lines_,
                            {"PEREGRINE_FUSE_URING_PARAM=" + param});
  }

  Volume volume_;
  TempDir param_dir_;
  LineReader lines_;
};

TEST_F(TransportChoiceTest, AutoFallsBackToClassicAndSaysWhy) {
  ASSERT_TRUE(mount_with_uring_off("auto")) << lines_.seen();
  EXPECT_NE(lines_.seen().find("FUSE transport: classic"), std::string::npos) << lines_.seen();
  EXPECT_NE(lines_.seen().find("enable_uring"), std::string::npos) << "no reason given: " << lines_.seen();
  EXPECT_EQ(transport_of(volume_.mountpoint()).at("name").get<std::string>(), "classic");
  direct_round_trip(volume_.at("f"));
}

TEST_F(TransportChoiceTest, IoUringRefusesWhenTheKernelDoesNotOfferIt) {
  EXPECT_FALSE(mount_with_uring_off("io-uring"));
  while (lines_.next()) {
  }
  // The daemon has closed stderr: it is exiting or gone.
  if (volume_.daemon_pid() > 0) {
    int status = wait_exit(volume_.daemon_pid());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "wait status " << status;
    volume_.adopt(0);
  }
  EXPECT_NE(lines_.seen().find("fuse.transport = io-uring"), std::string::npos) << lines_.seen();
  EXPECT_NE(lines_.seen().find("enable_uring"), std::string::npos) << lines_.seen();
  EXPECT_FALSE(mount_at(volume_.mountpoint())) << "mounted although the transport was refused";
}

// A fuse.ring_memory_mib that holds 16 entries of 256 KiB per possible CPU
// (at least the option's minimum, 16): on any machine the rings then cannot
// keep 1 MiB entries, so INIT's reply must lower max_write and max_pages to
// the smaller entries (the kernel refuses to register an entry smaller than
// its largest request, and would serve classic instead), and the shape
// stays within the budget however many CPUs the machine may have. 1 MiB
// direct writes and reads then arrive split on the rings and come back
// byte for byte.
class RingBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test_transport() != "io-uring") GTEST_SKIP() << "rings exist on io-uring only";
    std::string why = mount_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(volume_.mkfs().code, 0);
  }
  Volume volume_;
  LineReader lines_;
};

TEST_F(RingBudgetTest, SmallBudgetServesBigRequestsSplitOnSmallerEntries) {
  const uint64_t possible_cpus = static_cast<uint64_t>(get_nprocs_conf());
  const uint64_t entry_bytes = (uint64_t{256} << 10) + 4096;
  const uint64_t budget_mib = std::max<uint64_t>(16, (possible_cpus * 16 * entry_bytes + (1 << 20) - 1) >> 20);
  ASSERT_TRUE(mount_foreground(
      volume_, {"-o", "fuse.transport=io-uring,fuse.ring_memory_mib=" + std::to_string(budget_mib)}, &lines_))
      << lines_.seen();
  // "mounted" is logged when the kernel mounts, before INIT is answered
  // and the rings register; until then the stats say classic.
  ASSERT_TRUE(lines_.wait_for("FUSE transport: io-uring")) << lines_.seen();
  json before = transport_of(volume_.mountpoint());
  ASSERT_EQ(before.at("name").get<std::string>(), "io-uring") << before.dump();
  const uint64_t entries = before.at("ring_entries").get<uint64_t>();
  const uint64_t request_bytes = before.at("ring_request_bytes").get<uint64_t>();
  const uint64_t rings = before.at("ring_requests").size();
  EXPECT_LT(request_bytes, uint64_t{1} << 20);
  EXPECT_EQ(rings, possible_cpus) << before.dump();
  EXPECT_LE(rings * entries * (request_bytes + 4096), budget_mib << 20) << before.dump();

  constexpr size_t kBig = size_t{1} << 20;
  constexpr int kCount = 8;
  Fd fd(::open(volume_.at("big").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  void* mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, 4096, kBig), 0);
  auto* buf = static_cast<char*>(mem);
  for (int i = 0; i < kCount; ++i) {
    std::string p = pattern(kBig, 500 + i);
    std::memcpy(buf, p.data(), kBig);
    ASSERT_EQ(::pwrite(fd.get(), buf, kBig, off_t{i} * off_t{kBig}), static_cast<ssize_t>(kBig))
        << std::strerror(errno);
  }
  for (int i = 0; i < kCount; ++i) {
    std::memset(buf, 0, kBig);
    ASSERT_EQ(::pread(fd.get(), buf, kBig, off_t{i} * off_t{kBig}), static_cast<ssize_t>(kBig)) << std::strerror(errno);
    ASSERT_TRUE(std::string(buf, kBig) == pattern(kBig, 500 + i)) << "MiB " << i;
  }
  std::free(mem);
  json after = transport_of(volume_.mountpoint());
  // Each 1 MiB request became at least 1 MiB / request_bytes requests.
  EXPECT_GE(ring_total(after) - ring_total(before), 2 * kCount * (kBig / request_bytes)) << after.dump();
  EXPECT_EQ(after.at("dev_fuse_requests").get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace peregrine::fstest
