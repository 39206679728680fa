// Statistics: the user.peregrine.stats document of the mount root, the
// `peregrine stats` command (text, --json, --watch) built on it, and the
// daemon's periodic summary line in its log (stats.log_interval_s), after a
// large sequential write that must reach every drive.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "fs_test_util.h"
#include "peregrine/engine/drive_stats.h"

namespace peregrine::fstest {
namespace {

using nlohmann::json;
using StatsTest = MountedTest;

constexpr uint64_t kWrite = 64 << 20;
// Every drive gets a quarter of a striped sequential write; half of that
// leaves room for where the allocator put the extent.
constexpr uint64_t kPerDriveAtLeast = kWrite / 4 / 2;

void write_sequential(const std::string& path) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(::posix_memalign(&buf, 4096, 1 << 20), 0);
  std::string chunk = pattern(1 << 20, 1);
  std::memcpy(buf, chunk.data(), chunk.size());
  for (uint64_t off = 0; off < kWrite; off += 1 << 20) ASSERT_TRUE(write_at(fd.get(), buf, 1 << 20, off));
  std::free(buf);
  ASSERT_EQ(::fsync(fd.get()), 0);
}

std::set<std::string> member_set(const Volume& v) { return {v.members().begin(), v.members().end()}; }

TEST_F(StatsTest, XattrDocumentDescribesEveryDrive) {
  write_sequential(at("seq"));
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(volume_->mountpoint().c_str(), "user.peregrine.stats", buf.data(), buf.size());
  ASSERT_GT(n, 0) << std::strerror(errno);
  json doc = json::parse(buf.substr(0, static_cast<size_t>(n)));
  EXPECT_GT(doc.at("time_ns").get<uint64_t>(), 0u);
  ASSERT_EQ(doc.at("drives").size(), 4u);
  std::set<std::string> names;
  std::set<uint64_t> indices;
  for (const json& d : doc["drives"]) {
    names.insert(d.at("name").get<std::string>());
    indices.insert(d.at("index").get<uint64_t>());
    EXPECT_GT(d.at("queue_depth").get<uint64_t>(), 0u);
    EXPECT_GE(d.at("bytes_written").get<uint64_t>(), kPerDriveAtLeast) << d.dump();
    EXPECT_GE(d.at("subios").get<uint64_t>(), d.at("ios").get<uint64_t>()) << "merging only lowers the IO count";
    EXPECT_GT(d.at("ios").get<uint64_t>(), 0u);
    for (const char* k : {"merged", "bytes_read", "flushes", "tag_waits", "pressure_waits", "inline_batches",
                          "short_ios", "errors", "retried_unmerged", "backlog", "queued", "in_flight"})
      EXPECT_TRUE(d.contains(k)) << k;
    EXPECT_EQ(d.at("errors").get<uint64_t>(), 0u);
    uint64_t device = 0;
    for (const json& pair : d.at("device_latency")) {
      int bucket = pair.at(0).get<int>();
      EXPECT_TRUE(bucket >= 0 && bucket < 256) << bucket;
      device += pair.at(1).get<uint64_t>();
    }
    EXPECT_GE(device, 1u) << "a drive that did IO has device latencies";
    EXPECT_TRUE(d.at("stack_latency").is_array());
    // IOs by op: the sequential write reached the device as writes only
    // (reads and flushes account for the rest).
    EXPECT_EQ(d.at("read_ios").get<uint64_t>() + d.at("write_ios").get<uint64_t>() + d.at("flushes").get<uint64_t>(),
              d.at("ios").get<uint64_t>())
        << d.dump();
    EXPECT_GE(d.at("write_ios").get<uint64_t>(), 1u) << d.dump();
    // The exact latency sum lies between the bucket bounds of what was
    // recorded.
    for (const char* h : {"stack_latency", "device_latency"}) {
      uint64_t low = 0, high = 0;
      for (const json& pair : d.at(h)) {
        int bucket = pair.at(0).get<int>();
        uint64_t n = pair.at(1).get<uint64_t>();
        low += n * (bucket == 0 ? 0 : LatencyHistogram::bucket_upper(bucket - 1) + 1);
        high += n * LatencyHistogram::bucket_upper(bucket);
      }
      uint64_t sum = d.at(std::string(h) + "_sum_ns").get<uint64_t>();
      EXPECT_GE(sum, low) << h << " " << d.dump();
      EXPECT_LE(sum, high) << h << " " << d.dump();
    }
    EXPECT_GT(d.at("device_latency_sum_ns").get<uint64_t>(), 0u);
  }
  EXPECT_EQ(names, member_set(*volume_));
  EXPECT_EQ(indices, (std::set<uint64_t>{0, 1, 2, 3}));

  // Which volume, and how full its areas are, as statfs says.
  EXPECT_FALSE(doc.at("volume").at("uuid").get<std::string>().empty()) << doc.dump();
  EXPECT_TRUE(doc.at("volume").contains("label"));
  struct statvfs sv {};
  ASSERT_EQ(::statvfs(volume_->mountpoint().c_str(), &sv), 0) << std::strerror(errno);
  const json& space = doc.at("space");
  EXPECT_EQ(space.at("total_bytes").get<uint64_t>(), uint64_t{sv.f_blocks} * sv.f_frsize);
  EXPECT_LE(space.at("free_bytes").get<uint64_t>() + kWrite, space.at("total_bytes").get<uint64_t>())
      << "the written file takes space";
  const json& md = doc.at("metadata");
  EXPECT_GT(md.at("capacity_bytes").get<uint64_t>(), md.at("used_bytes").get<uint64_t>());
  EXPECT_GT(md.at("used_bytes").get<uint64_t>(), 0u);
  EXPECT_EQ(md.at("inodes").get<uint64_t>(), 2u) << "the root and the file";
  EXPECT_FALSE(md.at("write_failed").get<bool>());
}

TEST_F(StatsTest, CommandPrintsTextAndJson) {
  write_sequential(at("seq"));
  RunResult j = run({peregrine_bin(), "stats", "--json", volume_->mountpoint()});
  ASSERT_EQ(j.code, 0) << j.describe();
  json doc = json::parse(j.out);
  ASSERT_EQ(doc.at("drives").size(), 4u);
  std::set<std::string> names;
  uint64_t total = 0;
  for (const json& d : doc["drives"]) {
    names.insert(d.at("name").get<std::string>());
    EXPECT_GE(d.at("bytes_written").get<uint64_t>(), kPerDriveAtLeast) << d.dump();
    EXPECT_GE(d.at("device_latency_ns").at("count").get<uint64_t>(), 1u);
    EXPECT_GE(d.at("device_latency_ns").at("p99").get<uint64_t>(), d.at("device_latency_ns").at("p50").get<uint64_t>());
    total += d.at("bytes_written").get<uint64_t>();
  }
  EXPECT_EQ(names, member_set(*volume_));
  EXPECT_EQ(doc.at("total").at("bytes_written").get<uint64_t>(), total);
  EXPECT_GE(total, kWrite);
  // The engine settings in effect, resolved: the defaults are 1 and 32
  // sub-IOs per drive (watermarks, volume-wide) and 768/1024 per drive.
  ASSERT_TRUE(doc.contains("engine")) << j.out;
  EXPECT_EQ(doc["engine"].at("scheduler").get<std::string>(), "per-drive");
  EXPECT_EQ(doc["engine"].at("low_watermark").get<uint64_t>(), 4u);
  EXPECT_EQ(doc["engine"].at("high_watermark").get<uint64_t>(), 128u);
  EXPECT_EQ(doc["engine"].at("pressure_low").get<uint64_t>(), 768u);
  EXPECT_EQ(doc["engine"].at("pressure_high").get<uint64_t>(), 1024u);

  RunResult t = run({peregrine_bin(), "stats", volume_->mountpoint()});
  ASSERT_EQ(t.code, 0) << t.describe();
  for (const std::string& m : volume_->members()) EXPECT_NE(t.out.find(m), std::string::npos) << m << "\n" << t.out;
  EXPECT_NE(t.out.find("p99.9"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(
                "engine: per-drive scheduler, watermarks low 4 high 128 sub-IOs (volume), pressure 768/1024 per drive"),
            std::string::npos)
      << t.out;
}

TEST_F(StatsTest, WatchPrintsOneDeltaPerInterval) {
  write_sequential(at("seq"));
  RunResult before = run({peregrine_bin(), "stats", "--json", volume_->mountpoint()});
  ASSERT_EQ(before.code, 0) << before.describe();
  uint64_t total_before = json::parse(before.out).at("total").at("bytes_written").get<uint64_t>();
  RunResult w = run({peregrine_bin(), "stats", "--watch", "0.2", "--count", "2", "--json", volume_->mountpoint()});
  ASSERT_EQ(w.code, 0) << w.describe();
  std::istringstream lines(w.out);
  std::string line;
  int reports = 0;
  while (std::getline(lines, line)) {
    json r = json::parse(line);
    ++reports;
    EXPECT_FALSE(r.at("since_mount").get<bool>());
    EXPECT_GT(r.at("seconds").get<double>(), 0);
    EXPECT_EQ(r.at("drives").size(), 4u);
    // Deltas over an idle interval: far below the totals since mount.
    EXPECT_LT(r.at("total").at("bytes_written").get<uint64_t>(), total_before);
  }
  EXPECT_EQ(reports, 2);
}

TEST(StatsLogTest, ForegroundDaemonLogsIntervalSummaries) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v;
  ASSERT_EQ(v.mkfs().code, 0);
  LineReader lines;
  ASSERT_TRUE(mount_foreground(v, {"-o", "stats.log_interval_s=1,log.target=stderr"}, &lines)) << lines.seen();

  write_sequential(v.at("seq"));
  // Summaries come once a second while there is IO; together they must
  // account for the whole write, and each names all four drives.
  const std::regex summary(R"(stats over ([0-9.]+) s: ([0-9.]+) IOPS \(per drive: (\d+) (\d+) (\d+) (\d+)\), )"
                           R"(read [0-9.]+ MB/s, written ([0-9.]+) MB/s, .* errors 0, device latency p50 .* p99 .*)");
  double written_mb = 0;
  int summaries = 0;
  while (written_mb < kWrite / 1e6 * 0.9) {
    auto line = lines.next();
    ASSERT_TRUE(line) << "the daemon stopped logging before the write was accounted for:\n" << lines.seen();
    if (line->find("stats over") == std::string::npos) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(*line, m, summary)) << *line;
    ++summaries;
    written_mb += std::stod(m[7]) * std::stod(m[1]);
    EXPECT_GT(std::stod(m[2]), 0.0) << *line;
  }
  EXPECT_GE(summaries, 1);
  EXPECT_EQ(v.unmount(), 0);
  while (lines.next()) {
  }
  EXPECT_NE(lines.seen().find("unmounted " + v.mountpoint() + " cleanly"), std::string::npos) << lines.seen();
}

TEST_F(StatsTest, ClearErrors) {
  RunResult native = run({peregrine_bin(), "stats", volume_->dir()});
  EXPECT_EQ(native.code, 1);
  EXPECT_NE(native.err.find("not a peregrine mount"), std::string::npos) << native.err;
  std::string missing = volume_->dir() + "/missing";
  RunResult gone = run({peregrine_bin(), "stats", missing});
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find(missing), std::string::npos) << gone.err;
  EXPECT_EQ(run({peregrine_bin(), "stats"}).code, 2);
  EXPECT_EQ(run({peregrine_bin(), "stats", "--help"}).code, 0);
}

}  // namespace
}  // namespace peregrine::fstest
