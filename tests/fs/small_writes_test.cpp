// Writes of less than a block (fs_write.cpp): read-modify-write of the
// edge blocks under the file's exclusive gate. Several O_APPEND writers on
// one file and on files of their own keep every record, in each writer's
// order (on /tmp members and on memory members, whose IO the submitting
// thread reaps itself); an unaligned overwrite keeps the bytes around it;
// and on the
// io-uring transport with memory-backed members a ring thread serves the
// appends itself (try_serve_write_without_waiting) instead of handing each
// to a blocking-op thread, with the same bytes on the volume.
#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

using SmallWritesTest = MountedTest;

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

// The transport's counters from the statistics document.
json transport_of(const std::string& mountpoint) {
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(mountpoint.c_str(), "user.peregrine.stats", buf.data(), buf.size());
  if (n <= 0) return json::object({{"error", std::string("no statistics: ") + std::strerror(errno)}});
  return json::parse(buf.substr(0, static_cast<size_t>(n))).at("transport");
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
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    shm_ = tmpl;
    for (int i = 0; i < 4; ++i) members_.push_back(shm_ + "/m" + std::to_string(i));
    std::vector<std::string> argv = {peregrine_bin(), "mkfs", "--size", "64M"};
    argv.insert(argv.end(), members_.begin(), members_.end());
    RunResult made = run(argv);
    ASSERT_EQ(made.code, 0) << made.describe();
    RunResult mounted = volume_.mount({}, members_);
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
