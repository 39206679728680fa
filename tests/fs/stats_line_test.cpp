// The daemon's periodic summary line (stats.log_interval_s): the numbers it
// prints for one interval, computed from two snapshots of drive counters.
#include <gtest/gtest.h>

#include "peregrine/fs/stats_log.h"

namespace peregrine::fs {
namespace {

DriveStats drive(uint64_t ios, uint64_t read, uint64_t written) {
  DriveStats s;
  s.ios = ios;
  s.bytes_read = read;
  s.bytes_written = written;
  return s;
}

TEST(StatsLine, SummarisesTheIntervalNotTheTotals) {
  std::vector<DriveStats> before = {drive(1000, 0, 0), drive(500, 0, 0)};
  std::vector<DriveStats> after = {drive(3000, 8000000, 0), drive(1500, 0, 4000000)};
  after[0].merged = 7;
  after[1].tag_waits = 3;
  for (int i = 0; i < 99; ++i) after[0].device_latency.record(100000);  // 100 us
  after[1].device_latency.record(5000000);                              // 5 ms, the slowest 1%
  std::string line = stats_line(before, after, 2.0);
  // 3000 IOs in 2 s; drive 0 did 2000 of them, drive 1 1000.
  EXPECT_NE(line.find("stats over 2 s: 1500 IOPS (per drive: 1000 500)"), std::string::npos) << line;
  EXPECT_NE(line.find("read 4.0 MB/s, written 2.0 MB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("merged 7, tag waits 3, pressure waits 0, errors 0"), std::string::npos) << line;
  // The histogram's bucket bounds: within 19% above the recorded values.
  EXPECT_NE(line.find("p50 1"), std::string::npos) << line;
  EXPECT_NE(line.find("p99 1"), std::string::npos) << line;
}

TEST(StatsLine, QuietIntervalWritesNothingButErrorsAlwaysShow) {
  std::vector<DriveStats> same = {drive(10, 4096, 0)};
  EXPECT_EQ(stats_line(same, same, 1.0), "");
  std::vector<DriveStats> failed = same;
  failed[0].errors = 2;
  std::string line = stats_line(same, failed, 1.0);
  EXPECT_NE(line.find("errors 2"), std::string::npos) << line;
  EXPECT_NE(line.find("device latency p50 - p99 -"), std::string::npos) << line;
}

TEST(StatsLine, ManyDrivesAreAllListedAndTheLineEndsWhole) {
  std::vector<DriveStats> before(100), after(100);
  for (size_t d = 0; d < after.size(); ++d) after[d].ios = 1000000 + d;
  std::string line = stats_line(before, after, 1.0);
  std::string list;
  for (size_t d = 0; d < after.size(); ++d) list += (d ? " " : "") + std::to_string(1000000 + d);
  EXPECT_NE(line.find("(per drive: " + list + "), read 0.0 MB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("device latency p50 - p99 -"), std::string::npos) << line;
}

TEST(StatsLine, MismatchedSnapshotsGiveNothing) {
  EXPECT_EQ(stats_line({drive(1, 0, 0)}, {drive(2, 0, 0), drive(3, 0, 0)}, 1.0), "");
  EXPECT_EQ(stats_line({drive(1, 0, 0)}, {drive(2, 0, 0)}, 0.0), "");
}

}  // namespace
}  // namespace peregrine::fs
