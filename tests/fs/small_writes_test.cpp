// Writes of less than a block (fs_write.cpp): read-modify-write of the
// edge blocks under the file's exclusive gate, or a patch of the file's
// tail block kept in memory (tail_blocks.h): reads see it at once, every
// other change of those bytes gives what ext4 gives, an unlinked file's
// tail never lands on another file, and what a commit covered survives
// kill -9 with nothing but the end lost. Several O_APPEND writers on
// one file and on files of their own keep every record, in each writer's
// order (on /tmp members and on memory members, whose IO the submitting
// thread reaps itself); an unaligned overwrite keeps the bytes around it;
// and on the
// io-uring transport with memory-backed members a ring thread serves the
// appends itself (try_serve_write_without_waiting) instead of handing each
// to a blocking-op thread, with the same bytes on the volume.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <linux/magic.h>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using json = nlohmann::json;

// The bytes of `path` as 4-byte records.
std::vector<uint32_t> records_of(const std::string& path) {
  std::string bytes = read_file(path);
  std::vector<uint32_t> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// `count` 4-byte O_APPEND writes of (writer << 24 | i) to `path`; false on
// the first failure.
bool append_records(const std::string& path, uint32_t writer, uint32_t count) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
  if (!fd.ok()) return false;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t record = writer << 24 | i;
    if (::write(fd.get(), &record, sizeof record) != sizeof record) return false;
  }
  return true;
}

// Three writers append to one file and each to one of its own under `dir`:
// every record is there once, each writer's in its order.
void several_appenders_keep_every_record(const std::string& dir) {
  auto at = [&](const std::string& name) { return dir + "/" + name; };
  constexpr uint32_t kWriters = 3;
  constexpr uint32_t kRecords = 3000;  // 12000 bytes each: the appends cross blocks
  std::vector<std::thread> threads;
  std::vector<char> ok(kWriters * 2, 0);
  for (uint32_t w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] { ok[w] = append_records(at("shared"), w + 1, kRecords); });
    threads.emplace_back([&, w] { ok[kWriters + w] = append_records(at("own" + std::to_string(w)), w + 1, kRecords); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < ok.size(); ++i) ASSERT_TRUE(ok[i]) << "appender " << i << " failed";

  for (uint32_t w = 0; w < kWriters; ++w) {
    std::vector<uint32_t> own = records_of(at("own" + std::to_string(w)));
    ASSERT_EQ(own.size(), kRecords) << "own" << w;
    for (uint32_t i = 0; i < kRecords; ++i) ASSERT_EQ(own[i], (w + 1) << 24 | i) << "own" << w << " record " << i;
  }
  // One file, three appenders: each record once, each writer's in order.
  std::vector<uint32_t> shared = records_of(at("shared"));
  ASSERT_EQ(shared.size(), kWriters * kRecords);
  std::map<uint32_t, uint32_t> next;  // writer -> the record it wrote next
  for (size_t at_record = 0; at_record < shared.size(); ++at_record) {
    uint32_t writer = shared[at_record] >> 24;
    ASSERT_TRUE(writer >= 1 && writer <= kWriters) << "record " << at_record << " is " << shared[at_record];
    ASSERT_EQ(shared[at_record] & 0xffffff, next[writer]) << "record " << at_record << " of writer " << writer;
    ++next[writer];
  }
}

using SmallWritesTest = DirectMountedTest;  // tail blocks: a direct-mode feature

TEST_F(SmallWritesTest, SeveralAppendersKeepEveryRecordInTheirOrder) {
  several_appenders_keep_every_record(volume_->mountpoint());
}

TEST_F(SmallWritesTest, UnalignedOverwriteKeepsTheBytesAroundIt) {
  std::string data = pattern(3 * 4096, 7);
  ASSERT_TRUE(write_file(at("f"), data));
  Fd fd(::open(at("f").c_str(), O_WRONLY));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  // Across the first block boundary, then inside the last block.
  ASSERT_EQ(::pwrite(fd.get(), "0123456789", 10, 4090), 10) << std::strerror(errno);
  ASSERT_EQ(::pwrite(fd.get(), "abc", 3, 2 * 4096 + 100), 3) << std::strerror(errno);
  data.replace(4090, 10, "0123456789");
  data.replace(2 * 4096 + 100, 3, "abc");
  EXPECT_TRUE(read_file(at("f")) == data);
}

// A section of the statistics document.
json stats_section(const std::string& mountpoint, const char* section) {
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(mountpoint.c_str(), "user.peregrine.stats", buf.data(), buf.size());
  if (n <= 0) return json::object({{"error", std::string("no statistics: ") + std::strerror(errno)}});
  return json::parse(buf.substr(0, static_cast<size_t>(n))).at(section);
}
json transport_of(const std::string& mountpoint) { return stats_section(mountpoint, "transport"); }
uint64_t tails_absorbed(const std::string& mountpoint) {
  json t = stats_section(mountpoint, "tail_blocks");
  return t.contains("absorbed") ? t.at("absorbed").get<uint64_t>() : 0;
}

// Commits every change so far: syncfs(2) does not reach a FUSE daemon, an
// fsync commits the journal up to that file's last change (and so every
// change before it), and a change of a file of its own is the last one.
bool commit_everything(const std::string& dir) {
  static int n = 0;
  const std::string marker = dir + "/.commit" + std::to_string(n++);
  Fd fd(::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  return fd.ok() && ::write(fd.get(), "x", 1) == 1 && ::fsync(fd.get()) == 0;
}

// The file's tail block (fuse.tail_blocks, src/fs/tail_blocks.h): small
// writes inside a file's partial last block patch it in memory, reads see
// them at once, whole and in part.
TEST_F(SmallWritesTest, AppendsPatchTheTailBlockAndReadsSeeThemAtOnce) {
  constexpr uint32_t kRecords = 3000;
  const uint64_t before = tails_absorbed(volume_->mountpoint());
  ASSERT_TRUE(append_records(at("log"), 1, kRecords));
  // 12000 bytes: three blocks begin with a read-modify-write, the other
  // appends land in the tail (unless a commit interval dropped it idle).
  EXPECT_GE(tails_absorbed(volume_->mountpoint()) - before, kRecords / 2);
  std::vector<uint32_t> records = records_of(at("log"));
  ASSERT_EQ(records.size(), kRecords);
  for (uint32_t i = 0; i < kRecords; ++i) ASSERT_EQ(records[i], 1u << 24 | i) << "record " << i;
  Fd fd(::open(at("log").c_str(), O_RDONLY));
  ASSERT_TRUE(fd.ok());
  uint32_t last[10];
  ASSERT_EQ(::pread(fd.get(), last, sizeof last, (kRecords - 10) * 4), static_cast<ssize_t>(sizeof last));
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(last[i], 1u << 24 | (kRecords - 10 + i));
}

// Every operation that changes a file's bytes other than a write inside
// its tail block, run on a file whose tail is dirty, gives what ext4 gives
// (the same calls on a file in /tmp, compared after each step).
TEST_F(SmallWritesTest, TruncateFallocateAndOverwritesOfATailBlockMatchExt4) {
  TempDir ext4("peregrine-small-writes-ref");
  // pwrite on an O_APPEND descriptor appends on Linux: seek instead.
  auto appends = [](int fd, int n, char c) {
    if (::lseek(fd, 0, SEEK_END) < 0) return false;
    for (int i = 0; i < n; ++i) {
      if (::write(fd, &c, 1) != 1) return false;
    }
    return true;
  };
  const std::string block = pattern(4096, 5);
  const std::vector<FileStep> steps = {
      {"appends to 5000 bytes", [&](int fd, const std::string&) { return appends(fd, 5000, 'a'); }},
      {"truncate into the tail block", [](int fd, const std::string&) { return ::ftruncate(fd, 4100) == 0; }},
      {"appends after truncate", [&](int fd, const std::string&) { return appends(fd, 100, 'b'); }},
      {"whole-block write over the tail block", [&](int fd, const std::string&) { return write_at(fd, block, 4096); }},
      {"appends after it", [&](int fd, const std::string&) { return appends(fd, 7, 'c'); }},
      {"punch the tail block",
       [](int fd, const std::string&) {
         return ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 4096) == 0;
       }},
      {"appends after the punch", [&](int fd, const std::string&) { return appends(fd, 3, 'd'); }},
      {"unaligned overwrite across the tail's start",
       [](int fd, const std::string&) { return write_at(fd, "XYZ", 8190) == true; }},
      {"zero range inside the tail block",
       [](int fd, const std::string&) {
         return ::fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 8195, 2) == 0;
       }},
      {"truncate up", [](int fd, const std::string&) { return ::ftruncate(fd, 20000) == 0; }},
      {"appends after truncate up", [&](int fd, const std::string&) { return appends(fd, 11, 'e'); }},
      {"open with O_TRUNC",
       [](int, const std::string& path) { return Fd(::open(path.c_str(), O_WRONLY | O_TRUNC)).ok(); }},
      {"appends after O_TRUNC", [&](int fd, const std::string&) { return appends(fd, 9, 'f'); }},
  };
  const uint64_t absorbed_before = tails_absorbed(volume_->mountpoint());
  const std::string skip = run_beside_reference(steps, at("f"), ext4.path() + "/f", [&](const FileStep& step) {
    const std::string want = read_file(ext4.path() + "/f"), got = read_file(at("f"));
    ASSERT_EQ(got.size(), want.size()) << "after " << step.what;
    ASSERT_TRUE(got == want) << "after " << step.what;
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (HasFailure()) return;
  EXPECT_GT(tails_absorbed(volume_->mountpoint()), absorbed_before) << "no step met a dirty tail";
}

// A rewrite inside the tail block that does not grow the file journals
// nothing, so no commit would come to write it back: it goes to the
// members at once, and survives kill -9 with no commit after it.
TEST_F(SmallWritesTest, RewriteInsideTheTailBlockIsNotLeftInMemory) {
  ASSERT_TRUE(append_records(at("log"), 1, 100));
  ASSERT_TRUE(commit_everything(volume_->mountpoint()));
  {
    Fd fd(::open(at("log").c_str(), O_WRONLY));
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(write_at(fd.get(), "ZZZZ", 8));
  }
  volume_->kill9();
  ASSERT_EQ(volume_->mount().code, 0);
  std::string got = read_file(at("log"));
  ASSERT_EQ(got.size(), 400u);
  EXPECT_EQ(got.substr(8, 4), "ZZZZ");
}

// A file unlinked with its tail dirty: its blocks are freed, and once the
// allocator hands them out again the tail must not be written over them.
TEST_F(SmallWritesTest, AnUnlinkedFilesTailNeverLandsOnAnotherFile) {
  for (int f = 0; f < 8; ++f) {
    const std::string name = at("gone" + std::to_string(f));
    ASSERT_TRUE(write_file(name, std::string(4000, 'x')));
    ASSERT_TRUE(append_records(name, 9, 20));  // dirty tail
    ASSERT_EQ(::unlink(name.c_str()), 0);
  }
  ASSERT_TRUE(commit_everything(volume_->mountpoint()));
  // New files over the freed blocks, committed twice more (each commit
  // writes the tails back that still belong to their files).
  std::vector<std::string> data;
  for (int f = 0; f < 8; ++f) {
    data.push_back(pattern(64 << 10, 40 + f));
    ASSERT_TRUE(write_file(at("new" + std::to_string(f)), data.back()));
  }
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(commit_everything(volume_->mountpoint()));
  ASSERT_EQ(volume_->unmount(), 0);
  ASSERT_EQ(volume_->mount().code, 0);
  for (int f = 0; f < 8; ++f) EXPECT_TRUE(read_file(at("new" + std::to_string(f))) == data[f]) << "new" << f;
}

// The tail is written back before a commit covers its bytes: what an fsync
// or another file's commit covered survives kill -9, and what was appended after is
// lost from the end, never replaced by zeros inside the file.
TEST_F(SmallWritesTest, CommittedAppendsSurviveKill9AndTheRestIsLostFromTheEnd) {
  Fd fd(::open(at("log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
  ASSERT_TRUE(fd.ok());
  uint32_t next = 0;
  auto append = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i, ++next) {
      if (::write(fd.get(), &next, 4) != 4) return false;
    }
    return true;
  };
  ASSERT_TRUE(append(1500));
  ASSERT_EQ(::fsync(fd.get()), 0);
  ASSERT_TRUE(append(1500));
  ASSERT_TRUE(commit_everything(volume_->mountpoint()));  // the tail's size included
  const uint32_t committed = next;
  // Within the same block (12000 to 12080 of 12288): no read-modify-write
  // of a new block writes the tail back on the way.
  ASSERT_TRUE(append(20));
  fd = Fd(-1);
  volume_->kill9();
  ASSERT_EQ(volume_->mount().code, 0);
  std::string got = read_file(at("log"));
  ASSERT_EQ(got.size() % 4, 0u);
  ASSERT_GE(got.size() / 4, committed) << "committed appends lost";
  ASSERT_LE(got.size() / 4, next);
  for (uint32_t i = 0; i < got.size() / 4; ++i) {
    uint32_t v;
    std::memcpy(&v, got.data() + i * 4, 4);
    ASSERT_EQ(v, i) << "record " << i << " of " << got.size() / 4 << " (committed: " << committed << ")";
  }
}

// Members in /dev/shm: the engine finishes their IO inside the dispatch,
// and the thread that submitted it reaps it.
class MemoryMembersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = mount_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    struct statfs sfs;
    if (::statfs("/dev/shm", &sfs) != 0 || sfs.f_type != TMPFS_MAGIC) GTEST_SKIP() << "/dev/shm is not tmpfs";
    char tmpl[] = "/dev/shm/peregrine-small-writes-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) GTEST_SKIP() << "no room in /dev/shm: " << std::strerror(errno);
    shm_ = tmpl;
    for (int i = 0; i < 4; ++i) members_.push_back(shm_ + "/m" + std::to_string(i));
    std::vector<std::string> argv = {peregrine_bin(), "mkfs", "--size", "64M"};
    argv.insert(argv.end(), members_.begin(), members_.end());
    RunResult made = run(argv);
    ASSERT_EQ(made.code, 0) << made.describe();
    // Every small append reaches the daemon in fuse.cache = direct.
    RunResult mounted = volume_.mount({"-o", "fuse.cache=direct"}, members_);
    ASSERT_EQ(mounted.code, 0) << mounted.describe();
  }
  void TearDown() override {
    if (volume_.mounted()) {
      EXPECT_EQ(volume_.unmount(), 0);
    }
    wait_members_released(members_);
    if (!shm_.empty()) remove_tree(shm_);
  }
  std::string shm_;
  std::vector<std::string> members_;
  Volume volume_;
};

TEST_F(MemoryMembersTest, SeveralAppendersKeepEveryRecordInTheirOrder) {
  several_appenders_keep_every_record(volume_.mountpoint());
}

TEST_F(MemoryMembersTest, SmallAppendsAreServedOnTheRings) {
  if (test_transport() != "io-uring") GTEST_SKIP() << "ring threads exist on io-uring only";
  constexpr uint32_t kRecords = 4000;
  const json before = transport_of(volume_.mountpoint());
  ASSERT_TRUE(before.contains("name")) << before.dump();
  ASSERT_EQ(before.at("name").get<std::string>(), "io-uring") << before.dump();
  ASSERT_TRUE(append_records(volume_.at("log"), 1, kRecords)) << std::strerror(errno);
  const json after = transport_of(volume_.mountpoint());
  ASSERT_TRUE(after.contains("ring_data_requests")) << after.dump();
  // A try that waited after all (a drive busy with a metadata commit at
  // that moment) hands the next 256 to blocking-op threads; a quarter of
  // the appends are left for the rings unless that happens over and over
  // (without the ring path none are).
  const uint64_t on_rings =
      after.at("ring_data_requests").get<uint64_t>() - before.at("ring_data_requests").get<uint64_t>();
  EXPECT_GE(on_rings, kRecords / 4) << after.dump();
  std::vector<uint32_t> records = records_of(volume_.at("log"));
  ASSERT_EQ(records.size(), kRecords);
  for (uint32_t i = 0; i < kRecords; ++i) ASSERT_EQ(records[i], 1u << 24 | i) << "record " << i;
  // And on the volume, not only in some cache: after a remount.
  ASSERT_EQ(volume_.unmount(), 0);
  wait_members_released(members_);
  RunResult mounted = volume_.mount({}, members_);
  ASSERT_EQ(mounted.code, 0) << mounted.describe();
  EXPECT_EQ(records_of(volume_.at("log")), records);
}

}  // namespace
}  // namespace peregrine::fstest
