// The Prometheus exposition of a fixed statistics document, to the byte:
// names, labels and their escaping, cumulative histogram buckets in
// seconds; what a document from an older daemon gives; and the atomic
// replacement of the textfile.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <map>
#include <sstream>

#include "atomic_file.h"
#include "peregrine/engine/drive_stats.h"
#include "prometheus_format.h"

namespace peregrine::cli {
namespace {

using nlohmann::json;

TEST(PrometheusSeconds, ExactDecimals) {
  EXPECT_EQ(prometheus_seconds(0), "0");
  EXPECT_EQ(prometheus_seconds(1), "0.000000001");
  EXPECT_EQ(prometheus_seconds(1023), "0.000001023");
  EXPECT_EQ(prometheus_seconds(2'000'000'000), "2");
  EXPECT_EQ(prometheus_seconds(17'179'869'183), "17.179869183");
  EXPECT_EQ(prometheus_seconds(1'500'000'000), "1.5");
}

TEST(PrometheusLabelValue, EscapesBackslashQuoteAndNewlineOnly) {
  EXPECT_EQ(prometheus_label_value("/srv/pg/m0"), "/srv/pg/m0");
  EXPECT_EQ(prometheus_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(prometheus_label_value("tab\there {}=,"), "tab\there {}=,");
  EXPECT_EQ(prometheus_label_value("m\xc3\xa9mbre"), "m\xc3\xa9mbre");  // UTF-8 passes as is
}

// One drive whose path needs every escape; latencies of 500 ns, 1.5 us
// (twice), 3 ms and 30 s: below the first bound, between the first two,
// far up, and past the last (only +Inf counts it).
const char* kOneDrive = R"({
  "time_ns": 12000000000, "mount_time_ns": 2000000000, "pid": 42,
  "drives": [{"index": 0, "name": "/srv/a \"b\"\\c\nd", "queue_depth": 32,
    "subios": 10, "ios": 7, "read_ios": 2, "write_ios": 4, "merged": 3,
    "bytes_read": 8192, "bytes_written": 1048576, "flushes": 1, "tag_waits": 5,
    "pressure_waits": 6, "inline_batches": 8, "short_ios": 9, "errors": 11,
    "retried_unmerged": 12, "backlog": 13, "queued": 14, "in_flight": 15,
    "stack_latency": [[35, 1]], "stack_latency_sum_ns": 500,
    "device_latency": [[41, 2], [85, 1], [138, 1]], "device_latency_sum_ns": 30003003000}],
  "volume": {"label": "data", "uuid": "11111111-2222-3333-4444-555555555555"},
  "space": {"total_bytes": 4294967296, "free_bytes": 4293918720, "avail_bytes": 4293918720, "files_free": 1000},
  "metadata": {"capacity_bytes": 16773120, "used_bytes": 300, "inodes": 2, "write_failed": false},
  "transport": {"name": "io-uring", "ring_requests": [100, 7], "dev_fuse_requests": 0}
})";

// The bounds from 2^10 - 1 ns to 2^34 - 1 ns, and the cumulative count at
// each for kOneDrive's device latencies.
std::string device_buckets(const std::string& labels) {
  std::string out;
  for (int power = 9; power <= 33; ++power) {
    uint64_t top = (uint64_t{2} << power) - 1;
    uint64_t below = (top >= 1535 ? 2 : 0) + (top >= 3'145'727 ? 1 : 0);
    out += "peregrine_drive_device_latency_seconds_bucket{" + labels + ",le=\"" + prometheus_seconds(top) + "\"} " +
           std::to_string(below) + "\n";
  }
  return out;
}

std::string stack_buckets(const std::string& labels) {
  std::string out;
  for (int power = 9; power <= 33; ++power)
    out += "peregrine_drive_stack_latency_seconds_bucket{" + labels + ",le=\"" +
           prometheus_seconds((uint64_t{2} << power) - 1) + "\"} 1\n";
  return out;
}

TEST(PrometheusText, ExactTextOfOneDrive) {
  ASSERT_EQ(LatencyHistogram::bucket_of(500), 35);
  ASSERT_EQ(LatencyHistogram::bucket_of(1500), 41);
  ASSERT_EQ(LatencyHistogram::bucket_upper(41), 1535u);
  ASSERT_EQ(LatencyHistogram::bucket_of(3'000'000), 85);
  ASSERT_EQ(LatencyHistogram::bucket_upper(85), 3'145'727u);
  ASSERT_EQ(LatencyHistogram::bucket_of(30'000'000'000), 138);

  const std::string v = R"(volume="data",mountpoint="/mnt/pg \"x\"")";
  const std::string d = v + R"(,drive="0",member="/srv/a \"b\"\\c\nd")";
  const std::string expected =
      "# HELP peregrine_volume_info Always 1: the volume's label, UUID and the FUSE transport that serves it.\n"
      "# TYPE peregrine_volume_info gauge\n"
      "peregrine_volume_info{" +
      v +
      R"(,label="data",uuid="11111111-2222-3333-4444-555555555555",transport="io-uring"} 1)"
      "\n"
      "# HELP peregrine_volume_uptime_seconds Time since the volume was mounted.\n"
      "# TYPE peregrine_volume_uptime_seconds gauge\n"
      "peregrine_volume_uptime_seconds{" +
      v +
      "} 10\n"
      "# HELP peregrine_volume_size_bytes Size of the data area (statfs f_blocks).\n"
      "# TYPE peregrine_volume_size_bytes gauge\n"
      "peregrine_volume_size_bytes{" +
      v +
      "} 4294967296\n"
      "# HELP peregrine_volume_free_bytes Free bytes of the data area (statfs f_bfree).\n"
      "# TYPE peregrine_volume_free_bytes gauge\n"
      "peregrine_volume_free_bytes{" +
      v +
      "} 4293918720\n"
      "# HELP peregrine_volume_avail_bytes Free bytes that can still be written: 0 once the metadata area cannot "
      "map more (statfs f_bavail).\n"
      "# TYPE peregrine_volume_avail_bytes gauge\n"
      "peregrine_volume_avail_bytes{" +
      v +
      "} 4293918720\n"
      "# HELP peregrine_volume_files_free About how many more files the metadata area has room for (statfs "
      "f_ffree).\n"
      "# TYPE peregrine_volume_files_free gauge\n"
      "peregrine_volume_files_free{" +
      v +
      "} 1000\n"
      "# HELP peregrine_metadata_capacity_bytes Size of the metadata area's checkpoint body: new files fail with "
      "ENOSPC as use nears it.\n"
      "# TYPE peregrine_metadata_capacity_bytes gauge\n"
      "peregrine_metadata_capacity_bytes{" +
      v +
      "} 16773120\n"
      "# HELP peregrine_metadata_used_bytes Bytes of the metadata area in use.\n"
      "# TYPE peregrine_metadata_used_bytes gauge\n"
      "peregrine_metadata_used_bytes{" +
      v +
      "} 300\n"
      "# HELP peregrine_metadata_inodes Inodes in use, the root included.\n"
      "# TYPE peregrine_metadata_inodes gauge\n"
      "peregrine_metadata_inodes{" +
      v +
      "} 2\n"
      "# HELP peregrine_metadata_write_failed 1 once a journal or checkpoint write failed: the volume refuses "
      "changes until remounted.\n"
      "# TYPE peregrine_metadata_write_failed gauge\n"
      "peregrine_metadata_write_failed{" +
      v +
      "} 0\n"
      "# HELP peregrine_fuse_ring_requests_total FUSE requests served by each io-uring ring (one ring per CPU).\n"
      "# TYPE peregrine_fuse_ring_requests_total counter\n"
      "peregrine_fuse_ring_requests_total{" +
      v +
      ",ring=\"0\"} 100\n"
      "peregrine_fuse_ring_requests_total{" +
      v +
      ",ring=\"1\"} 7\n"
      "# HELP peregrine_fuse_dev_fuse_requests_total Requests other than INIT, FORGET, INTERRUPT and DESTROY that "
      "came over /dev/fuse after the io-uring rings were registered (0 in normal operation).\n"
      "# TYPE peregrine_fuse_dev_fuse_requests_total counter\n"
      "peregrine_fuse_dev_fuse_requests_total{" +
      v +
      "} 0\n"
      "# HELP peregrine_drive_ios_total IOs sent to the device, after merging, by operation.\n"
      "# TYPE peregrine_drive_ios_total counter\n"
      "peregrine_drive_ios_total{" +
      d +
      ",op=\"read\"} 2\n"
      "peregrine_drive_ios_total{" +
      d +
      ",op=\"write\"} 4\n"
      "peregrine_drive_ios_total{" +
      d +
      ",op=\"flush\"} 1\n"
      "# HELP peregrine_drive_bytes_total Bytes read from and written to the device.\n"
      "# TYPE peregrine_drive_bytes_total counter\n"
      "peregrine_drive_bytes_total{" +
      d +
      ",op=\"read\"} 8192\n"
      "peregrine_drive_bytes_total{" +
      d +
      ",op=\"write\"} 1048576\n"
      "# HELP peregrine_drive_subios_total Sub-IOs the drive received (the pieces of file IO that fall on this "
      "member).\n"
      "# TYPE peregrine_drive_subios_total counter\n"
      "peregrine_drive_subios_total{" +
      d +
      "} 10\n"
      "# HELP peregrine_drive_merged_subios_total Sub-IOs that joined a neighbour's IO rather than going alone.\n"
      "# TYPE peregrine_drive_merged_subios_total counter\n"
      "peregrine_drive_merged_subios_total{" +
      d +
      "} 3\n"
      "# HELP peregrine_drive_tag_waits_total IOs that found no free device tag and waited for one.\n"
      "# TYPE peregrine_drive_tag_waits_total counter\n"
      "peregrine_drive_tag_waits_total{" +
      d +
      "} 5\n"
      "# HELP peregrine_drive_pressure_waits_total Times a submitting worker blocked because the drive's queue was "
      "at its high pressure point.\n"
      "# TYPE peregrine_drive_pressure_waits_total counter\n"
      "peregrine_drive_pressure_waits_total{" +
      d +
      "} 6\n"
      "# HELP peregrine_drive_inline_batches_total Batches dispatched by a submitting thread rather than the "
      "drive's thread.\n"
      "# TYPE peregrine_drive_inline_batches_total counter\n"
      "peregrine_drive_inline_batches_total{" +
      d +
      "} 8\n"
      "# HELP peregrine_drive_short_ios_total Transfers resubmitted after the device did less than asked.\n"
      "# TYPE peregrine_drive_short_ios_total counter\n"
      "peregrine_drive_short_ios_total{" +
      d +
      "} 9\n"
      "# HELP peregrine_drive_errors_total IOs the device failed.\n"
      "# TYPE peregrine_drive_errors_total counter\n"
      "peregrine_drive_errors_total{" +
      d +
      "} 11\n"
      "# HELP peregrine_drive_retried_unmerged_total Failed merged IOs re-sent piece by piece.\n"
      "# TYPE peregrine_drive_retried_unmerged_total counter\n"
      "peregrine_drive_retried_unmerged_total{" +
      d +
      "} 12\n"
      "# HELP peregrine_drive_in_flight_ios IOs on the device.\n"
      "# TYPE peregrine_drive_in_flight_ios gauge\n"
      "peregrine_drive_in_flight_ios{" +
      d +
      "} 15\n"
      "# HELP peregrine_drive_backlog_ios IOs waiting for a free device tag.\n"
      "# TYPE peregrine_drive_backlog_ios gauge\n"
      "peregrine_drive_backlog_ios{" +
      d +
      "} 13\n"
      "# HELP peregrine_drive_queued_subios Sub-IOs received and not yet dispatched.\n"
      "# TYPE peregrine_drive_queued_subios gauge\n"
      "peregrine_drive_queued_subios{" +
      d +
      "} 14\n"
      "# HELP peregrine_drive_queue_depth Device tags: the most IOs the drive keeps on the device at once.\n"
      "# TYPE peregrine_drive_queue_depth gauge\n"
      "peregrine_drive_queue_depth{" +
      d +
      "} 32\n"
      "# HELP peregrine_drive_stack_latency_seconds Time sub-IOs spent in peregrine's queues, from arrival to "
      "dispatch to the device.\n"
      "# TYPE peregrine_drive_stack_latency_seconds histogram\n" +
      stack_buckets(d) + "peregrine_drive_stack_latency_seconds_bucket{" + d +
      ",le=\"+Inf\"} 1\n"
      "peregrine_drive_stack_latency_seconds_sum{" +
      d +
      "} 0.0000005\n"
      "peregrine_drive_stack_latency_seconds_count{" +
      d +
      "} 1\n"
      "# HELP peregrine_drive_device_latency_seconds Device latency of IOs, from dispatch to completion.\n"
      "# TYPE peregrine_drive_device_latency_seconds histogram\n" +
      device_buckets(d) + "peregrine_drive_device_latency_seconds_bucket{" + d +
      ",le=\"+Inf\"} 4\n"
      "peregrine_drive_device_latency_seconds_sum{" +
      d +
      "} 30.003003\n"
      "peregrine_drive_device_latency_seconds_count{" +
      d + "} 4\n";
  EXPECT_EQ(prometheus_text(json::parse(kOneDrive), "/mnt/pg \"x\"", "unused"), expected);
}

TEST(PrometheusText, BucketsAreCumulativeAtTheBounds) {
  const std::string text = prometheus_text(json::parse(kOneDrive), "/mnt/pg", "unused");
  std::map<std::string, std::string> device;  // le -> count
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("peregrine_drive_device_latency_seconds_bucket{", 0) != 0) continue;
    size_t le = line.find("le=\"");
    ASSERT_NE(le, std::string::npos) << line;
    size_t end = line.find('"', le + 4);
    device[line.substr(le + 4, end - le - 4)] = line.substr(line.rfind(' ') + 1);
  }
  ASSERT_EQ(device.size(), 26u) << text;
  EXPECT_EQ(device.at("0.000001023"), "0");  // below 1.5 us
  EXPECT_EQ(device.at("0.000002047"), "2");  // the two of 1.5 us
  EXPECT_EQ(device.at("0.002097151"), "2");
  EXPECT_EQ(device.at("0.004194303"), "3");   // and the one of 3 ms
  EXPECT_EQ(device.at("17.179869183"), "3");  // 30 s is past every bound
  EXPECT_EQ(device.at("+Inf"), "4");
}

TEST(PrometheusText, DrivesInIndexOrderWithTheirOwnLabels) {
  json doc = json::parse(kOneDrive);
  json second = doc["drives"][0];
  second["index"] = 1;
  second["name"] = "/dev/nvme1n1";
  second["bytes_written"] = 77;
  doc["drives"].insert(doc["drives"].begin(), second);  // listed first, index 1
  doc["volume"]["label"] = "";                          // no label: the UUID names it
  const std::string text = prometheus_text(doc, "/mnt/pg", "unused");
  const std::string v = R"(volume="11111111-2222-3333-4444-555555555555",mountpoint="/mnt/pg")";
  size_t first =
      text.find("peregrine_drive_bytes_total{" + v + R"(,drive="0",member="/srv/a \"b\"\\c\nd",op="write"} 1048576)");
  size_t other = text.find("peregrine_drive_bytes_total{" + v + R"(,drive="1",member="/dev/nvme1n1",op="write"} 77)");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(other, std::string::npos) << text;
  EXPECT_LT(first, other);
  EXPECT_NE(text.find(R"(peregrine_volume_info{)" + v + R"(,label="",uuid=)"), std::string::npos) << text;
}

TEST(PrometheusText, OlderDaemonGivesWhatItKnows) {
  json doc = json::parse(kOneDrive);
  doc.erase("volume");
  doc.erase("space");
  doc.erase("metadata");
  doc.erase("transport");
  doc.erase("mount_time_ns");
  for (json& d : doc["drives"])
    for (const char* k : {"read_ios", "write_ios", "stack_latency_sum_ns", "device_latency_sum_ns"}) d.erase(k);
  const std::string text = prometheus_text(doc, "/mnt/pg", "old");
  EXPECT_NE(text.find(R"(peregrine_volume_info{volume="old",mountpoint="/mnt/pg",label="",uuid="",transport=""} 1)"),
            std::string::npos)
      << text;
  for (const char* gone :
       {"peregrine_volume_uptime_seconds", "peregrine_volume_size_bytes", "peregrine_metadata_used_bytes",
        "peregrine_fuse_", "peregrine_drive_ios_total", "_latency_seconds"})
    EXPECT_EQ(text.find(gone), std::string::npos) << gone << "\n" << text;
  EXPECT_NE(text.find("peregrine_drive_bytes_total{"), std::string::npos) << text;
}

// Discards: per drive and per volume, from a daemon that counts them
// (kOneDrive is from one that does not: no discard series at all).
TEST(PrometheusText, DiscardCountersWhenTheDaemonHasThem) {
  json doc = json::parse(kOneDrive);
  EXPECT_EQ(prometheus_text(doc, "/mnt/pg", "old").find("discard"), std::string::npos);
  doc["drives"][0]["discards"] = 3;
  doc["drives"][0]["discarded_bytes"] = 1048576;
  doc["drives"][0]["discard_errors"] = 1;
  doc["discard"] = {{"online", true},       {"online_bytes", 4096},   {"fstrim_runs", 2},
                    {"fstrim_bytes", 8192}, {"pending_bytes", 12288}, {"errors", 1}};
  const std::string text = prometheus_text(doc, "/mnt/pg", "old");
  const std::string drive = R"({volume="data",mountpoint="/mnt/pg",drive="0",member="/srv/a \"b\"\\c\nd"})";
  const std::string vol = R"({volume="data",mountpoint="/mnt/pg")";
  for (const std::string& line :
       std::vector<std::string>{std::string("# TYPE peregrine_drive_discarded_bytes_total counter"),
                                "peregrine_drive_discards_total" + drive + " 3",
                                "peregrine_drive_discarded_bytes_total" + drive + " 1048576",
                                "peregrine_drive_discard_errors_total" + drive + " 1",
                                "peregrine_volume_discarded_bytes_total" + vol + R"(,by="fstrim"} 8192)",
                                "peregrine_volume_discarded_bytes_total" + vol + R"(,by="online"} 4096)",
                                "peregrine_volume_fstrim_runs_total" + vol + "} 2",
                                "peregrine_volume_discard_pending_bytes" + vol + "} 12288",
                                "# TYPE peregrine_volume_discard_pending_bytes gauge"})
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
}

// Kept last blocks (fuse.tail_blocks), from a daemon that counts them.
TEST(PrometheusText, TailBlockCountersWhenTheDaemonHasThem) {
  json doc = json::parse(kOneDrive);
  EXPECT_EQ(prometheus_text(doc, "/mnt/pg", "old").find("tail_block"), std::string::npos);
  doc["tail_blocks"] = {{"live", 2}, {"absorbed", 3000}, {"written_back", 7}};
  const std::string text = prometheus_text(doc, "/mnt/pg", "old");
  const std::string vol = R"({volume="data",mountpoint="/mnt/pg"})";
  for (const std::string& line : std::vector<std::string>{
           "# TYPE peregrine_tail_blocks gauge", "peregrine_tail_blocks" + vol + " 2",
           "# TYPE peregrine_tail_block_writes_total counter", "peregrine_tail_block_writes_total" + vol + " 3000",
           "peregrine_tail_block_write_backs_total" + vol + " 7"})
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
}

// Blocks of small reads kept in memory (fuse.read_blocks), likewise.
TEST(PrometheusText, ReadBlockCountersWhenTheDaemonHasThem) {
  json doc = json::parse(kOneDrive);
  EXPECT_EQ(prometheus_text(doc, "/mnt/pg", "old").find("read_block"), std::string::npos);
  doc["read_blocks"] = {{"hits", 12000}, {"kept", 300}};
  const std::string text = prometheus_text(doc, "/mnt/pg", "old");
  const std::string vol = R"({volume="data",mountpoint="/mnt/pg"})";
  for (const std::string& line : std::vector<std::string>{
           "# TYPE peregrine_read_block_hits_total counter", "peregrine_read_block_hits_total" + vol + " 12000",
           "# TYPE peregrine_read_blocks_kept_total counter", "peregrine_read_blocks_kept_total" + vol + " 300"})
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
}

TEST(PrometheusText, MissingFieldThrows) {
  json doc = json::parse(kOneDrive);
  doc["drives"][0].erase("errors");
  EXPECT_THROW(prometheus_text(doc, "/mnt/pg", "x"), std::exception);
  doc = json::parse(kOneDrive);
  doc["drives"][0]["device_latency"] = json::parse("[[256, 1]]");
  EXPECT_THROW(prometheus_text(doc, "/mnt/pg", "x"), std::exception);
}

class ReplaceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/peregrine-replace-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename());
    return out;
  }
  std::string dir_;
};

TEST_F(ReplaceFileTest, ReplacesWholeWithNewFileModeAndNoLeftovers) {
  const std::string path = dir_ + "/peregrine.prom";
  mode_t old = ::umask(022);
  ASSERT_TRUE(replace_file(path, "first\n"));
  ASSERT_TRUE(replace_file(path, "second\n"));
  ::umask(old);
  EXPECT_EQ(read(path), "second\n");
  EXPECT_EQ(names(), std::vector<std::string>{"peregrine.prom"}) << "no temporary file stays";
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u) << "readable by a collector running as another user";
}

TEST_F(ReplaceFileTest, ErrorNamesTheFileAndLeavesNothing) {
  const std::string path = dir_ + "/missing/peregrine.prom";
  Status s = replace_file(path, "x");
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.message();
  EXPECT_TRUE(names().empty());
}

}  // namespace
}  // namespace peregrine::cli
