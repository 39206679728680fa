#include "peregrine/fs/stats_log.h"

#include <chrono>
#include <cstdio>

#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

std::string latency(uint64_t ns) {
  char buf[32];
  if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f us", ns / 1e3);
  }
  return buf;
}

}  // namespace

std::string stats_line(const std::vector<DriveStats>& before, const std::vector<DriveStats>& after, double seconds) {
  if (before.size() != after.size() || seconds <= 0) return "";
  uint64_t ios = 0, read = 0, written = 0, merged = 0, tag_waits = 0, pressure = 0, errors = 0;
  LatencyHistogram device;
  std::string per_drive;
  for (size_t d = 0; d < after.size(); ++d) {
    const DriveStats& a = before[d];
    const DriveStats& b = after[d];
    uint64_t drive_ios = b.ios - a.ios;
    ios += drive_ios;
    read += b.bytes_read - a.bytes_read;
    written += b.bytes_written - a.bytes_written;
    merged += b.merged - a.merged;
    tag_waits += b.tag_waits - a.tag_waits;
    pressure += b.pressure_waits - a.pressure_waits;
    errors += b.errors - a.errors;
    // The interval's own latencies: bucket counts only grow.
    for (int k = 0; k < LatencyHistogram::kBuckets; ++k) {
      uint64_t n = b.device_latency.bucket_count(k) - a.device_latency.bucket_count(k);
      if (n != 0) device.add_bucket(k, n);
    }
    per_drive += (d ? " " : "") + std::to_string(static_cast<uint64_t>(drive_ios / seconds + 0.5));
  }
  if (ios == 0 && errors == 0) return "";
  // The per-drive list grows with the member count, so it is not formatted
  // into a fixed buffer: only the bounded parts are.
  char head[96];
  std::snprintf(head, sizeof head, "stats over %.0f s: %.0f IOPS (per drive: ", seconds, ios / seconds);
  char tail[384];
  std::snprintf(tail, sizeof tail,
                "), read %.1f MB/s, written %.1f MB/s, merged %llu, tag waits %llu, pressure waits %llu, "
                "errors %llu, device latency p50 %s p99 %s",
                read / seconds / 1e6, written / seconds / 1e6, static_cast<unsigned long long>(merged),
                static_cast<unsigned long long>(tag_waits), static_cast<unsigned long long>(pressure),
                static_cast<unsigned long long>(errors), device.count() ? latency(device.percentile(50)).c_str() : "-",
                device.count() ? latency(device.percentile(99)).c_str() : "-");
  return head + per_drive + tail;
}

StatsLog::StatsLog(const Engine& engine, uint32_t interval_s, std::function<void(const std::string&)> sink)
    : engine_(engine), interval_s_(interval_s), sink_(std::move(sink)) {
  thread_ = std::thread([this] { run(); });
}

StatsLog::~StatsLog() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::vector<DriveStats> StatsLog::snapshot() const {
  std::vector<DriveStats> v;
  for (uint32_t d = 0; d < engine_.drive_count(); ++d) v.push_back(engine_.stats(d));
  return v;
}

void StatsLog::run() {
  std::vector<DriveStats> before = snapshot();
  uint64_t before_ns = monotonic_ns();
  auto stopping = [this] {
    mu_.assert_held();  // a wait predicate: runs under lock
    return stop_;
  };
  MutexLock lock(mu_);
  for (;;) {
    // A timed wait is the point here (a clock, not a hand-off); stop_ ends it early.
    if (lock.wait_for(cv_, std::chrono::seconds(interval_s_), stopping)) return;
    lock.unlock();
    std::vector<DriveStats> after = snapshot();
    uint64_t now = monotonic_ns();
    std::string line = stats_line(before, after, (now - before_ns) / 1e9);
    if (!line.empty()) sink_(line);
    before = std::move(after);
    before_ns = now;
    lock.lock();
  }
}

}  // namespace peregrine::fs
