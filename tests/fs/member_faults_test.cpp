// When a drive fails: faults injected into one member of a real mount
// (PEREGRINE_TEST_FAULTS, src/fs/test_faults.h), switched on and off by
// files the test creates and removes, so nothing here waits on time.
//
// - EIO on one member: only the requests touching it fail; the rest of the
//   file reads back; peregrine stats counts the errors on that drive; the
//   log names the member.
// - A failed metadata write: the volume turns read-only (fsync EIO, changes
//   EROFS), says so naming the member, unmounts, and the next mount replays
//   to a state fsck finds clean.
// - A stalled member: requests for the other members complete while its IO
//   is held; the pressure point bounds what queues for it; other requests
//   are read while a worker waits there; unmount waits for the held IO and
//   then finishes.
// - A member that is gone (ENODEV) or truncated: EIO to the application,
//   a log line naming it, no crash; fsck -n lists the files that lost data.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using nlohmann::json;

constexpr uint64_t kUnit = 128 << 10;  // mkfs's default stripe unit
constexpr int kMembers = 4;

class MemberFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace(kMembers, "64M");
    RunResult m = volume_->mkfs();
    ASSERT_EQ(m.code, 0) << m.describe();
  }
  void TearDown() override {
    if (volume_ && volume_->mounted()) volume_->unmount();
    volume_.reset();
  }

  // In fuse.cache = direct, so that each read and write meets the faulty
  // member itself and reports its own error at once. (On the default mount
  // reads may come from the page cache, and a buffered write's error comes
  // with the fsync: BufferedWriteErrorComesWithFsyncOnTheDefaultMount.)
  void mount_with(const std::string& faults, const std::vector<std::string>& options = {},
                  const std::string& cache = "direct") {
    std::vector<std::string> all = {"-o", "fuse.cache=" + cache};
    for (size_t i = 0; i + 1 < options.size(); i += 2) {
      if (options[i] == "-o") all[1] += "," + options[i + 1];
    }
    ASSERT_TRUE(mount_foreground(*volume_, all, &lines_, {"PEREGRINE_TEST_FAULTS=" + faults})) << lines_.seen();
  }
  // The next log line containing every one of `parts` (false at EOF).
  bool log_line_with(const std::vector<std::string>& parts, std::string* found = nullptr) {
    while (auto line = lines_.next()) {
      bool all = true;
      for (const std::string& p : parts) all = all && line->find(p) != std::string::npos;
      if (all) {
        if (found) *found = *line;
        return true;
      }
    }
    return false;
  }
  std::string arm(const std::string& name) { return volume_->dir() + "/" + name; }
  static void touch(const std::string& path) { ASSERT_TRUE(write_file(path, "")); }
  static void release(const std::string& path) { ASSERT_EQ(::unlink(path.c_str()), 0) << path; }

  json stats() {
    std::string buf(1 << 20, '\0');
    ssize_t n = ::getxattr(volume_->mountpoint().c_str(), "user.peregrine.stats", buf.data(), buf.size());
    EXPECT_GT(n, 0) << std::strerror(errno);
    return n > 0 ? json::parse(buf.substr(0, static_cast<size_t>(n))) : json::object();
  }
  // Drive counters are published by the drive thread when it goes idle:
  // wait for that (an event, not a time), with a guard against a hang.
  json stats_when(const std::function<bool(const json&)>& ready) {
    for (int i = 0; i < 6000; ++i) {
      json s = stats();
      if (ready(s)) return s;
      ::usleep(10000);
    }
    json s = stats();
    ADD_FAILURE() << "the statistics never showed the expected state: " << s["drives"].dump();
    return s;
  }
  RunResult fsck_n() {
    std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
    argv.insert(argv.end(), volume_->members().begin(), volume_->members().end());
    RunResult r = run(argv);
    volume_->wait_members_released();
    return r;
  }
  void write_synced(const std::string& rel, const std::string& data) {
    Fd fd(::open(at(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    ASSERT_TRUE(fd.ok()) << rel << ": " << std::strerror(errno);
    ASSERT_TRUE(write_at(fd.get(), data, 0)) << rel << ": " << std::strerror(errno);
    ASSERT_EQ(::fsync(fd.get()), 0) << rel << ": " << std::strerror(errno);
  }
  std::string at(const std::string& rel) const { return volume_->at(rel); }
  // Whether the thread `tid` names (once it is set) comes to wait in the
  // kernel for a direct WRITE's answer: its stack says so (an event, not a
  // time, with a guard against a hang).
  static bool waits_for_direct_io_answer(const std::atomic<pid_t>& tid) {
    for (int i = 0; i < 6000; ++i) {
      if (const pid_t t = tid.load(); t != 0) {
        const std::string stack = read_file("/proc/self/task/" + std::to_string(t) + "/stack");
        if (stack.find("fuse_direct_io") != std::string::npos) return true;
      }
      ::usleep(10000);
    }
    return false;
  }

  std::optional<Volume> volume_;
  LineReader lines_;
};

// Reads `file` block by block: counts the blocks that fail with EIO and
// checks every other block against `want`.
struct BlockScan {
  int ok = 0, eio = 0, other = 0;
};
BlockScan scan_blocks(const std::string& file, const std::string& want, size_t bytes) {
  BlockScan s;
  Fd fd(::open(file.c_str(), O_RDONLY));
  EXPECT_TRUE(fd.ok()) << std::strerror(errno);
  for (size_t off = 0; off < bytes; off += 4096) {
    char buf[4096];
    ssize_t n = ::pread(fd.get(), buf, sizeof buf, static_cast<off_t>(off));
    if (n < 0 && errno == EIO) {
      ++s.eio;
    } else if (n == 4096 && std::memcmp(buf, want.data() + off, 4096) == 0) {
      ++s.ok;
    } else {
      ++s.other;
      ADD_FAILURE() << "block at " << off << ": read " << n << " (" << std::strerror(errno)
                    << "), neither the data written nor EIO";
    }
  }
  return s;
}

TEST_F(MemberFaultsTest, EioOnOneMemberFailsOnlyTheRequestsTouchingIt) {
  const std::string on = arm("eio");
  mount_with("member=2,action=eio,op=read,while=" + on);
  // 2 MiB: four whole stripe rows, so a quarter of its blocks are on member 2.
  const std::string data = pattern(2 << 20, 31);
  write_synced("big", data);
  touch(on);

  BlockScan s = scan_blocks(at("big"), data, data.size());
  EXPECT_EQ(s.eio, static_cast<int>(data.size() / 4096 / kMembers)) << "one member in four fails";
  EXPECT_EQ(s.ok, static_cast<int>(data.size() / 4096 - data.size() / 4096 / kMembers));
  EXPECT_TRUE(log_line_with({"member " + volume_->members()[2] + " (index 2): read", "Input/output error"}))
      << lines_.seen();

  // Counted on that drive alone, in the document and in both command forms.
  const int failed = s.eio;
  json doc = stats_when([&](const json& d) { return d["drives"][2]["errors"].get<int>() >= failed; });
  for (int i = 0; i < kMembers; ++i)
    EXPECT_EQ(doc["drives"][i]["errors"].get<int>(), i == 2 ? failed : 0) << "drive " << i;
  RunResult j = run({peregrine_bin(), "stats", "--json", volume_->mountpoint()});
  ASSERT_EQ(j.code, 0) << j.describe();
  EXPECT_EQ(json::parse(j.out)["drives"][2]["errors"].get<int>(), failed);
  RunResult t = run({peregrine_bin(), "stats", volume_->mountpoint()});
  ASSERT_EQ(t.code, 0) << t.describe();
  std::smatch m;
  const std::regex row2(R"((?:^|\n)2\s+\d+\s+\d+\s+\d+\s+(\d+)\s)");
  ASSERT_TRUE(std::regex_search(t.out, m, row2)) << t.out;
  EXPECT_EQ(std::stoi(m[1]), failed) << t.out;

  // Still serving: writes work, and once the member is back every byte is.
  const std::string more = pattern(1 << 20, 32);
  write_synced("more", more);
  release(on);
  EXPECT_TRUE(read_file(at("big")) == data);
  EXPECT_TRUE(read_file(at("more")) == more);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

// The default mount: a buffered write lands in the page cache and returns;
// when its writeback fails on a member, fsync says so (as ext4 says an
// IO error of its writeback), and the bytes that did reach the members are
// intact once the member is back.
TEST_F(MemberFaultsTest, BufferedWriteErrorComesWithFsyncOnTheDefaultMount) {
  const std::string on = arm("wb");
  mount_with("member=3,action=eio,op=write,area=data,while=" + on, {}, "writeback");
  touch(on);
  const std::string data = pattern(2 << 20, 61);
  Fd fd(::open(at("cached").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  ASSERT_TRUE(write_at(fd.get(), data, 0)) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(::fsync(fd.get()), -1) << "a failed writeback went unreported";
  EXPECT_EQ(errno, EIO);
  EXPECT_TRUE(log_line_with({"member " + volume_->members()[3] + " (index 3): write", "Input/output error"}))
      << lines_.seen();
  fd.reset();
  // The member is back: the same bytes written again and fsync'd are kept.
  release(on);
  write_synced("cached", data);
  EXPECT_TRUE(read_file(at("cached")) == data);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

// A writeback answered before its IO (write-behind) that then fails on a
// member: the file was closed and nobody fsyncs it, so `peregrine sync`
// (the volume's sync) must say so rather than call the volume durable;
// once, as syncfs reports a writeback error.
TEST_F(MemberFaultsTest, PeregrineSyncReportsAFailedWritebackNobodyFsyncs) {
  const std::string on = arm("wb");
  mount_with("member=3,action=eio,op=write,area=data,while=" + on, {}, "writeback");
  touch(on);
  ASSERT_TRUE(write_file(at("closed"), pattern(2 << 20, 62)));  // closed: its writeback answered early
  RunResult r = run({peregrine_bin(), "sync", volume_->mountpoint()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("Input/output error"), std::string::npos) << r.err;
  release(on);
  r = run({peregrine_bin(), "sync", volume_->mountpoint()});
  EXPECT_EQ(r.code, 0) << "the error was reported again: " << r.describe();
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// `peregrine sync` fsyncs a file still open for writing through a handle
// of its own: it reports the failed writeback, and leaves the error for
// the writer's fsync too, which must not find its data called durable.
TEST_F(MemberFaultsTest, PeregrineSyncLeavesTheWritersFsyncItsError) {
  const std::string on = arm("wb");
  mount_with("member=3,action=eio,op=write,area=data,while=" + on, {}, "writeback");
  touch(on);
  Fd writer(::open(at("open").c_str(), O_WRONLY | O_CREAT, 0644));
  ASSERT_TRUE(writer.ok()) << std::strerror(errno);
  ASSERT_TRUE(write_at(writer.get(), pattern(2 << 20, 63), 0)) << std::strerror(errno);
  RunResult r = run({peregrine_bin(), "sync", volume_->mountpoint()});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("Input/output error"), std::string::npos) << r.err;
  errno = 0;
  EXPECT_EQ(::fsync(writer.get()), -1) << "peregrine sync took the writer's error";
  EXPECT_EQ(errno, EIO);
  writer.reset();
  release(on);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Once nobody writes the file any more, a failed writeback is reported
// once, to the first fsync after it, whatever its handle, as Linux reports
// an error nobody saw yet: `sync FILE` (coreutils) opens read-only.
TEST_F(MemberFaultsTest, AClosedFilesFailedWritebackGoesToTheNextFsyncOnce) {
  const std::string on = arm("wb");
  mount_with("member=3,action=eio,op=write,area=data,while=" + on, {}, "writeback");
  touch(on);
  ASSERT_TRUE(write_file(at("closed"), pattern(2 << 20, 64)));  // its writeback answered early, then failed
  // Its RELEASE comes after close(2), asynchronously: until the daemon has
  // it, the file still has a writer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::getxattr(volume_->mountpoint().c_str(), "user.peregrine.open_for_writing", nullptr, 0) != 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(::getxattr(volume_->mountpoint().c_str(), "user.peregrine.open_for_writing", nullptr, 0), 0);
  Fd reader(::open(at("closed").c_str(), O_RDONLY));
  ASSERT_TRUE(reader.ok()) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(::fsync(reader.get()), -1) << "a failed writeback went unreported";
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(::fsync(reader.get()), 0) << "reported twice";
  reader.reset();
  release(on);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(MemberFaultsTest, FailedMetadataWriteMakesTheVolumeReadOnly) {
  const std::string on = arm("meta");
  mount_with("member=1,action=eio,op=write,area=meta,while=" + on);
  const std::string kept = pattern(1 << 20, 41);
  write_synced("kept", kept);
  Fd kept_fd(::open(at("kept").c_str(), O_RDWR));
  ASSERT_TRUE(kept_fd.ok());
  touch(on);

  // Journal batches walk the ring over every member: one of them soon
  // lands on member 1 and fails. Each fsync that returned 0 is durable.
  std::vector<std::string> synced;
  int err = 0;
  for (int i = 0; i < 4096 && err == 0; ++i) {
    std::string name = "f" + std::to_string(i);
    Fd fd(::open(at(name).c_str(), O_WRONLY | O_CREAT, 0644));
    if (!fd.ok()) {
      err = errno;
      break;
    }
    if (!write_at(fd.get(), pattern(4096, 100 + i), 0)) {
      err = errno;
      break;
    }
    if (::fsync(fd.get()) != 0) {
      err = errno;
      break;
    }
    synced.push_back(name);
  }
  ASSERT_TRUE(err == EIO || err == EROFS) << "no metadata write failed, or the wrong error: " << std::strerror(err);
  EXPECT_TRUE(log_line_with({"volume is now read-only", "member " + volume_->members()[1] + " (index 1)"}))
      << lines_.seen();

  // Read-only from here: nothing more is acknowledged.
  errno = 0;
  EXPECT_EQ(::fsync(kept_fd.get()), -1);
  EXPECT_EQ(errno, EIO);
  errno = 0;
  EXPECT_EQ(::pwrite(kept_fd.get(), kept.data(), 4096, 0), -1);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_EQ(::mkdir(at("newdir").c_str(), 0755), -1);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_EQ(::open(at("newfile").c_str(), O_WRONLY | O_CREAT, 0644), -1);
  EXPECT_EQ(errno, EROFS);
  EXPECT_TRUE(read_file(at("kept")) == kept) << "reads keep working";
  kept_fd.reset();

  // The fault goes away; unmount finishes; the next mount replays.
  release(on);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status)) << status;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(at("kept")) == kept);
  for (size_t i = 0; i < synced.size(); ++i)
    EXPECT_TRUE(read_file(at(synced[i])) == pattern(4096, 100 + i)) << synced[i] << " was fsync'd";
  status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

TEST_F(MemberFaultsTest, StalledMemberHoldsOnlyItsOwnRequestsAndUnmountWaitsForIt) {
  const std::string hold = arm("hold");
  mount_with("member=2,action=hold,while=" + hold,
             {"-o",
              "drive.queue_depth=1,engine.high_pressure_per_drive=2,engine.low_pressure_per_drive=1,"
              "engine.high_watermark_per_drive=1"});
  const std::string data = pattern(4 << 20, 51);
  write_synced("big", data);
  // The writers below rewrite blocks that are allocated and written, so
  // they need no metadata change: a journal batch that lands on the held
  // member would stop allocating writers before they reach the engine.
  // Written from a page-aligned buffer, so that every WRITE is whole
  // blocks: from a heap string the kernel cuts them 16 bytes short of
  // 1 MiB, the file may keep its last block as a tail (tail_blocks.h), and
  // the writer over it takes the exclusive path, which waits for the held
  // member with the file's gate held: the other writers then wait for the
  // gate, not at the engine's pressure point (half the runs failed).
  constexpr int kWriters = 12;
  {
    const std::string w = pattern(kWriters * 4 * kUnit, 50);
    void* mem = nullptr;
    ASSERT_EQ(::posix_memalign(&mem, 4096, w.size()), 0);
    std::unique_ptr<void, decltype(&std::free)> aligned(mem, &std::free);
    std::memcpy(mem, w.data(), w.size());
    Fd fd(::open(at("w").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    ASSERT_TRUE(fd.ok()) << std::strerror(errno);
    ASSERT_TRUE(write_at(fd.get(), mem, w.size(), 0)) << std::strerror(errno);
    ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
  }
  touch(hold);

  // One read per stripe unit of two rows: two of the eight are on member 2.
  constexpr int kReaders = 2 * kMembers;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<int> finished(kReaders, 0);
  std::vector<std::thread> readers;
  for (int k = 0; k < kReaders; ++k) {
    readers.emplace_back([&, k] {
      Fd fd(::open(at("big").c_str(), O_RDONLY));
      std::string got = read_at(fd.get(), 4096, static_cast<off_t>(k * kUnit));
      bool same = got == data.substr(k * kUnit, 4096);
      std::lock_guard lk(mu);
      finished[k] = same ? 1 : -1;
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return done == kReaders - 2; }))
        << "reads on the other members did not complete while member 2 stalls";
    int wrong = 0;
    for (int f : finished) wrong += f == -1;
    EXPECT_EQ(wrong, 0) << "a read on another member returned wrong data";
    EXPECT_EQ(done, kReaders - 2) << "a read on the stalled member completed while it is held";
  }

  // Writers that keep writing: the pressure point stops what queues for
  // the stalled drive at its bound. The ring transport routes a request to
  // the ring of the CPU it comes from, so the writers run on one CPU and
  // this thread, which reads the statistics, on another. On the classic
  // transport any worker may be the one that blocks, and with all of them
  // blocked the statistics could not be read: there the bound is left to
  // tests/engine/pressure_points_test.cpp.
  std::vector<std::thread> writers;
  const std::string wdata = pattern(kWriters * 4 * kUnit, 52);
  const bool observe = test_transport() == "io-uring" && std::thread::hardware_concurrency() >= 2;
  if (observe) {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_SET(0, &mine);
    ASSERT_EQ(::sched_setaffinity(0, sizeof mine, &mine), 0);
    for (int t = 0; t < kWriters; ++t) {
      writers.emplace_back([&, t] {
        cpu_set_t other;
        CPU_ZERO(&other);
        CPU_SET(1, &other);
        ::sched_setaffinity(0, sizeof other, &other);
        Fd fd(::open(at("w").c_str(), O_WRONLY));
        // One stripe row per write: one sub-IO on every member.
        EXPECT_TRUE(write_at(fd.get(), wdata.data() + t * 4 * kUnit, 4 * kUnit, static_cast<off_t>(t * 4 * kUnit)))
            << std::strerror(errno);
      });
    }
    json doc = stats_when([](const json& d) { return d["drives"][2]["pressure_waits"].get<int>() > 0; });
    // Bound: the pressure point plus one hand-off of the ring thread that
    // blocked there (its batch is cut at the high watermark, 1 per drive).
    EXPECT_LE(doc["drives"][2]["queued"].get<int>(), 2 + kMembers) << doc["drives"][2].dump();
  }

  release(hold);
  for (auto& r : readers) r.join();
  for (auto& w : writers) w.join();
  cpu_set_t all;
  CPU_ZERO(&all);
  for (unsigned c = 0; c < std::thread::hardware_concurrency(); ++c) CPU_SET(c, &all);
  ::sched_setaffinity(0, sizeof all, &all);
  for (int f : finished) EXPECT_EQ(f, 1);
  if (observe) {
    EXPECT_TRUE(read_file(at("w")) == wdata);
  }

  // Unmount while the member stalls: the daemon cannot write its last
  // checkpoint until the held IO goes through, then it finishes cleanly.
  touch(hold);
  pid_t pid = volume_->daemon_pid();
  RunResult u = run({"umount", volume_->mountpoint()});
  ASSERT_EQ(u.code, 0) << u.describe();
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the daemon exited with its last checkpoint held";
  release(hold);
  status = wait_exit(pid);
  volume_->adopt(0);
  volume_->wait_members_released();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 0) << f.describe();
}

// A worker that blocks at a pressure point (its drive stalled) must not
// keep the other requests from being read meanwhile: on the classic
// transport it hands on its read turn before it blocks. Reads pile onto a
// held member until one blocks there; the statistics, a stat and a read of
// another member are served while it waits.
// A whole-block write that needs the exclusive path (here: over bytes a
// shared mapping read into the page cache, io_gates.h) waits for its
// stalled member on a thread that may wait, not on the ring it arrived on:
// a read of another member from the same CPU is served meanwhile. Before,
// the ring thread ran that path itself and every request of its CPU
// stopped with it.
TEST_F(MemberFaultsTest, AWholeBlockWriteWaitingForAStalledMemberLeavesItsRingServing) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "rings only (classic: OtherRequestsAreServed...)";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs a second CPU for the observer's ring";
  const std::string hold = arm("hold");
  mount_with("member=2,action=hold,while=" + hold);
  // Three stripe units; the mapping reads a page of the third (member 2)
  // into the page cache, and stays until the end.
  const std::string data = pattern(3 * kUnit, 54);
  write_synced("t", data);
  const std::string other = pattern(4096, 55);  // in the first unit: member 0
  write_synced("other", other);
  Fd mapped_fd(::open(at("t").c_str(), O_RDONLY));
  ASSERT_TRUE(mapped_fd.ok()) << std::strerror(errno);
  void* map = ::mmap(nullptr, data.size(), PROT_READ, MAP_SHARED, mapped_fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED) << std::strerror(errno);
  ASSERT_EQ(static_cast<const char*>(map)[2 * kUnit], data[2 * kUnit]);
  touch(hold);

  const std::string block = pattern(4096, 56);
  std::atomic<bool> written{false};
  auto on_cpu = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ::sched_setaffinity(0, sizeof one, &one);
  };
  std::atomic<pid_t> writer_tid{0};
  std::thread writer([&] {
    on_cpu(1);
    writer_tid = static_cast<pid_t>(::gettid());
    void* mem = nullptr;
    if (::posix_memalign(&mem, 4096, 4096) != 0) return;
    std::memcpy(mem, block.data(), 4096);
    Fd fd(::open(at("t").c_str(), O_WRONLY | O_DIRECT));
    EXPECT_TRUE(write_at(fd.get(), mem, 4096, static_cast<off_t>(2 * kUnit))) << std::strerror(errno);
    std::free(mem);
    written = true;
  });
  on_cpu(0);
  if (!waits_for_direct_io_answer(writer_tid)) {
    release(hold);
    writer.join();
    ::munmap(map, data.size());
    FAIL() << "the writer's WRITE never waited for an answer";
  }
  std::mutex mu;
  std::condition_variable cv;
  int read_ok = 0;  // 0: not yet, 1: right bytes, -1: wrong
  std::thread reader([&] {
    on_cpu(1);
    Fd fd(::open(at("other").c_str(), O_RDONLY | O_DIRECT));
    const int ok = read_at(fd.get(), 4096, 0) == other ? 1 : -1;
    std::lock_guard lk(mu);
    read_ok = ok;
    cv.notify_all();
  });
  {
    std::unique_lock lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return read_ok != 0; }))
        << "a read of member 0 from the writer's CPU waited for the stalled member";
    EXPECT_EQ(read_ok, 1) << "the read of member 0 returned wrong bytes";
    EXPECT_FALSE(written.load()) << "the write completed while its member was held";
  }
  release(hold);
  writer.join();
  reader.join();
  cpu_set_t all;
  CPU_ZERO(&all);
  for (unsigned c = 0; c < std::thread::hardware_concurrency(); ++c) CPU_SET(c, &all);
  ::sched_setaffinity(0, sizeof all, &all);
  EXPECT_TRUE(read_file(at("t")) == data.substr(0, 2 * kUnit) + block + data.substr(2 * kUnit + 4096));
  ::munmap(map, data.size());
}

// Direct-IO opens are answered FOPEN_PARALLEL_DIRECT_WRITES (the transport
// adds it for the filesystem: TransportHost::parallel_direct_writes), so
// the kernel takes the file's inode lock shared for a write inside the
// file: a second write to the same file reaches the daemon while the first
// waits for its member. Without the flag it waits in the kernel for the
// first one's answer.
TEST_F(MemberFaultsTest, DirectWritesToOneFileDoNotWaitForEachOther) {
  const std::string hold = arm("hold");
  mount_with("member=2,action=hold,while=" + hold);
  const std::string data = pattern(4 * kUnit, 57);  // one stripe unit on each member
  write_synced("f", data);
  touch(hold);

  const std::string first = pattern(4096, 58);  // member 2's unit: held
  std::atomic<bool> first_written{false};
  std::atomic<pid_t> first_tid{0};
  std::thread held_writer([&] {
    first_tid = static_cast<pid_t>(::gettid());
    Fd fd(::open(at("f").c_str(), O_WRONLY));
    EXPECT_TRUE(write_at(fd.get(), first, static_cast<off_t>(2 * kUnit))) << std::strerror(errno);
    first_written = true;
  });
  if (!waits_for_direct_io_answer(first_tid)) {
    release(hold);
    held_writer.join();
    FAIL() << "the first WRITE never waited for an answer";
  }

  const std::string second = pattern(4096, 59);  // member 0's unit
  std::mutex mu;
  std::condition_variable cv;
  bool second_done = false;
  std::thread free_writer([&] {
    Fd fd(::open(at("f").c_str(), O_WRONLY));
    EXPECT_TRUE(write_at(fd.get(), second, 0)) << std::strerror(errno);
    std::lock_guard lk(mu);
    second_done = true;
    cv.notify_all();
  });
  {
    std::unique_lock lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return second_done; }))
        << "a write to member 0 waited for another write to the same file";
    EXPECT_FALSE(first_written.load()) << "the write to the held member completed while it is held";
  }
  release(hold);
  held_writer.join();
  free_writer.join();
  EXPECT_TRUE(read_file(at("f")) ==
              second + data.substr(4096, 2 * kUnit - 4096) + first + data.substr(2 * kUnit + 4096));
}

TEST_F(MemberFaultsTest, OtherRequestsAreServedWhileAWorkerWaitsAtAPressurePoint) {
  const bool two_cpus = std::thread::hardware_concurrency() >= 2;
  if (test_transport() == "io-uring" && !two_cpus) {
    GTEST_SKIP() << "the ring transport serves a CPU's requests on its own ring: this needs a second CPU";
  }
  const std::string hold = arm("hold");
  mount_with("member=2,action=hold,while=" + hold,
             {"-o",
              "drive.queue_depth=1,engine.high_pressure_per_drive=2,engine.low_pressure_per_drive=1,"
              "engine.high_watermark_per_drive=1"});
  constexpr int kRows = 4;
  const std::string data = pattern(kRows * kMembers * kUnit, 53);
  write_synced("big", data);
  touch(hold);

  // One read per row on member 2: one takes its only tag, two queue, and
  // the next blocks at the high pressure point. On the ring transport the
  // readers run on CPU 1 and the observer below on CPU 0 (their rings).
  std::atomic<int> reads_done{0};
  std::vector<int> read_ok(kRows, 0);
  std::vector<std::thread> readers;
  for (int k = 0; k < kRows; ++k) {
    readers.emplace_back([&, k] {
      if (two_cpus) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(1, &one);
        ::sched_setaffinity(0, sizeof one, &one);
      }
      const off_t at_off = static_cast<off_t>((k * kMembers + 2) * kUnit);
      Fd fd(::open(at("big").c_str(), O_RDONLY | O_DIRECT));
      read_ok[k] = read_at(fd.get(), 4096, at_off) == data.substr(at_off, 4096) ? 1 : -1;
      reads_done.fetch_add(1);
    });
  }

  std::mutex mu;
  std::condition_variable cv;
  bool observed = false;
  json seen;
  bool stat_ok = false, other_read_ok = false;
  int reads_done_then = -1;
  std::thread observer([&] {
    if (two_cpus) {
      cpu_set_t zero;
      CPU_ZERO(&zero);
      CPU_SET(0, &zero);
      ::sched_setaffinity(0, sizeof zero, &zero);
    }
    json d = stats_when([](const json& s) { return s["drives"][2]["pressure_waits"].get<int>() > 0; });
    struct stat st {};
    bool st_ok = ::stat(at("big").c_str(), &st) == 0 && st.st_size == static_cast<off_t>(data.size());
    Fd fd(::open(at("big").c_str(), O_RDONLY | O_DIRECT));
    bool rd_ok = read_at(fd.get(), 4096, 0) == data.substr(0, 4096);  // member 0
    int done_then = reads_done.load();
    std::lock_guard lk(mu);
    seen = d;
    stat_ok = st_ok;
    other_read_ok = rd_ok;
    reads_done_then = done_then;
    observed = true;
    cv.notify_all();
  });
  {
    std::unique_lock lk(mu);
    bool in_time = cv.wait_for(lk, std::chrono::seconds(60), [&] { return observed; });
    EXPECT_TRUE(in_time) << "no request was served while a worker waited at the pressure point";
    if (in_time) {
      EXPECT_GT(seen["drives"][2]["pressure_waits"].get<int>(), 0);
      EXPECT_TRUE(stat_ok) << "stat of the file failed or gave the wrong size";
      EXPECT_TRUE(other_read_ok) << "a read on member 0 returned wrong data";
      EXPECT_EQ(reads_done_then, 0) << "a read on the held member completed while it is held";
    }
  }
  release(hold);  // also ends a wait the test gave up on, so the threads can be joined
  observer.join();
  for (auto& r : readers) r.join();
  for (int k = 0; k < kRows; ++k) EXPECT_EQ(read_ok[k], 1) << "read " << k << " of the held member";
}

TEST_F(MemberFaultsTest, DeviceGoneFailsItsRequestsWithEioAndSaysSo) {
  const std::string gone = arm("gone");
  mount_with("member=3,action=enodev,op=read,while=" + gone);
  const std::string data = pattern(2 << 20, 61);
  write_synced("big", data);
  touch(gone);
  BlockScan s = scan_blocks(at("big"), data, data.size());
  EXPECT_EQ(s.eio, static_cast<int>(data.size() / 4096 / kMembers));
  EXPECT_TRUE(log_line_with({"member " + volume_->members()[3] + " (index 3): read", "the device is gone"}))
      << lines_.seen();
  release(gone);
  EXPECT_TRUE(read_file(at("big")) == data);
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // Gone for good: fsck names the member and says what that means.
  RunResult f =
      run({peregrine_bin(), "fsck", "-n", volume_->members()[0], volume_->members()[1], volume_->members()[2]});
  EXPECT_EQ(f.code, 8) << f.describe();
  EXPECT_NE(f.err.find("1 of 4 members missing: index 3"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("no file can be listed"), std::string::npos) << f.err;
  volume_->wait_members_released();
}

TEST_F(MemberFaultsTest, TruncatedMemberFailsReadsAndFsckListsWhatIsLost) {
  mount_with("");
  const std::string big = pattern(2 << 20, 71);
  write_synced("big", big);
  ASSERT_EQ(::mkdir(at("dir").c_str(), 0755), 0);
  write_synced("dir/small", pattern(4096, 72));
  // Keep member 3's header and metadata share (1 MiB header + 4 MiB of the
  // 16 MiB metadata area, the mkfs default for 4 x 64 MiB); cut its data.
  const uint64_t keep = (1 << 20) + (16 << 20) / kMembers;
  ASSERT_EQ(::truncate(volume_->members()[3].c_str(), static_cast<off_t>(keep)), 0);

  BlockScan s = scan_blocks(at("big"), big, big.size());
  EXPECT_EQ(s.eio, static_cast<int>(big.size() / 4096 / kMembers));
  EXPECT_TRUE(log_line_with({"member " + volume_->members()[3] + " (index 3): read", "shorter than the volume"}))
      << lines_.seen();
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  RunResult f = fsck_n();
  EXPECT_EQ(f.code, 4) << f.describe();
  EXPECT_NE(f.out.find("member " + volume_->members()[3] + " (index 3) is short"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("lost: /big ("), std::string::npos) << f.out;
}

}  // namespace
}  // namespace peregrine::fstest
