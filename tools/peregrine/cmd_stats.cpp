// `peregrine stats`: per-drive statistics of a mounted volume, once (totals
// since mount) or every N seconds (deltas between two snapshots); or, with
// --prometheus, the totals in the Prometheus text format
// (prometheus_format.h), printed or written atomically to a file for
// node_exporter's textfile collector, once or every N seconds.
//
// The daemon publishes a JSON snapshot as the extended attribute
// "user.peregrine.stats" of the mount root (see docs/usage.md for the
// fields); this command reads it with getxattr(2), so it needs no socket and
// works for any user who may read the mount root. Exit codes: 0 printed,
// 1 not a peregrine mount / daemon unreachable / bad document, 2 bad
// command line.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "atomic_file.h"
#include "commands.h"
#include "mount_table.h"
#include "prometheus_format.h"
#include "peregrine/engine/drive_stats.h"
#include "peregrine/fs/stats_xattr.h"
#include "peregrine/util/result.h"

namespace peregrine::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

using fs::kStatsXattr;

constexpr const char* kUsage =
    "usage: peregrine stats [--watch SECONDS] [--count N] [--json] MOUNTPOINT\n"
    "       peregrine stats --prometheus [--output FILE [--watch SECONDS] [--count N]] MOUNTPOINT\n\n"
    "Prints per-drive statistics of the peregrine volume mounted at MOUNTPOINT:\n"
    "IOs and IOPS, MB/s read and written, merged sub-IOs, tag waits, the queue\n"
    "(in flight / waiting for a tag / not yet dispatched, and the tag count),\n"
    "and the latency percentiles p50/p99/p99.9 of the software stack (sub-IO\n"
    "arrival to dispatch) and of the device (dispatch to completion).\n"
    "Without --watch: one report of the totals since mount. With --watch: a\n"
    "report every SECONDS of what happened during that interval.\n\n"
    "With --prometheus: the totals since mount in the Prometheus text format\n"
    "(counters, gauges and latency histograms in seconds, labelled with the\n"
    "volume, mountpoint, member and drive), on stdout or, with --output, in\n"
    "FILE, replaced atomically; with --watch, rewritten every SECONDS.\n\n"
    "options";

// Counters that accumulate since mount (a watch report shows their delta);
// everything else in a drive is a gauge shown as is.
constexpr const char* kCounters[] = {"subios",         "ios",
                                     "merged",         "bytes_read",
                                     "bytes_written",  "flushes",
                                     "tag_waits",      "pressure_waits",
                                     "inline_batches", "short_ios",
                                     "errors",         "retried_unmerged",
                                     "discards",       "discarded_bytes",
                                     "discard_errors", "polled",
                                     "holds"};
// Counters a daemon of an older release does not publish: 0 then.
bool newer_counter(std::string_view k) { return k.starts_with("discard") || k == "polled" || k == "holds"; }
constexpr const char* kGauges[] = {"backlog", "queued", "in_flight", "queue_depth"};

using Histogram = std::map<int, uint64_t>;  // bucket -> count, non-empty buckets

struct Drive {
  uint64_t index = 0;
  std::string name;
  std::map<std::string, uint64_t> values;  // counters and gauges by JSON name
  Histogram stack_latency;
  Histogram device_latency;
};

// How the classic workers, or on io-uring the rings, looked for requests
// before sleeping (fuse.read_spin_us).
struct ReadSpinCounts {
  bool present = false;
  uint64_t window_ns = 0;
  uint64_t requests_found = 0;
  uint64_t sleeps = 0;
};

struct Snapshot {
  uint64_t time_ns = 0;
  std::optional<uint64_t> mount_time_ns;  // "mount_time_ns" when the daemon provides it
  std::vector<Drive> drives;
  std::string transport;                // "" from a daemon too old to say
  std::vector<uint64_t> ring_requests;  // io-uring transport: requests served per ring
  json engine;                          // effective engine settings (null from an older daemon)
  json replace;                         // the latest online replace (null: none, or an older daemon)
  json restripe;                        // the latest online restripe (null: none, or an older daemon)
  uint64_t ring_entries = 0;            // io-uring: entries per ring (0 from an older daemon)
  uint64_t ring_request_bytes = 0;      // io-uring: largest request an entry carries
  uint64_t dev_fuse_requests = 0;       // io-uring: requests that still came over /dev/fuse
  ReadSpinCounts read_spin;             // the workers' or rings' looks (none from an older daemon)
};

// ---- reading and parsing the snapshot ----------------------------------------

Expected<std::string> read_xattr(const std::string& root) {
  std::string buf(64 * 1024, '\0');
  for (int attempt = 0; attempt < 8; ++attempt) {
    ssize_t n = ::getxattr(root.c_str(), kStatsXattr, buf.data(), buf.size());
    if (n >= 0) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    int e = errno;
    if (e == ERANGE) {  // the document grew: ask for its size and retry
      ssize_t need = ::getxattr(root.c_str(), kStatsXattr, nullptr, 0);
      buf.resize(need > 0 ? static_cast<size_t>(need) * 2 : buf.size() * 2);
      continue;
    }
    if (e == ENODATA || e == ENOTSUP)
      return Status::error(e, root + ": the daemon publishes no statistics (" + kStatsXattr + " " + std::strerror(e) +
                                  "); is it an older peregrine?");
    if (dead_mount_errno(e)) return Status::error(e, dead_mount_advice(root));
    return Status::error(e, root + ": cannot read " + kStatsXattr + ": " + std::strerror(e));
  }
  return Status::error(ERANGE, root + ": " + kStatsXattr + " keeps growing; giving up");
}

Histogram parse_histogram(const json& j) {
  Histogram h;
  for (const json& pair : j) {
    int bucket = pair.at(0).get<int>();
    if (bucket < 0 || bucket >= LatencyHistogram::kBuckets)
      throw std::out_of_range("latency bucket " + std::to_string(bucket) + " out of range");
    h[bucket] += pair.at(1).get<uint64_t>();
  }
  return h;
}

Expected<Snapshot> parse_snapshot(const std::string& root, const std::string& text) {
  try {
    json doc = json::parse(text);
    Snapshot s;
    s.time_ns = doc.at("time_ns").get<uint64_t>();
    if (doc.contains("mount_time_ns")) s.mount_time_ns = doc["mount_time_ns"].get<uint64_t>();
    if (doc.contains("transport")) {
      s.transport = doc["transport"].at("name").get<std::string>();
      s.ring_requests = doc["transport"].at("ring_requests").get<std::vector<uint64_t>>();
      s.dev_fuse_requests = doc["transport"].value("dev_fuse_requests", uint64_t{0});
      s.ring_entries = doc["transport"].value("ring_entries", uint64_t{0});
      s.ring_request_bytes = doc["transport"].value("ring_request_bytes", uint64_t{0});
      if (doc["transport"].contains("read_spin")) {
        const json& spin = doc["transport"]["read_spin"];
        s.read_spin.present = true;
        s.read_spin.window_ns = spin.value("window_ns", uint64_t{0});
        s.read_spin.requests_found = spin.value("requests_found", uint64_t{0});
        s.read_spin.sleeps = spin.value("sleeps", uint64_t{0});
      }
    }
    if (doc.contains("engine")) s.engine = doc["engine"];
    if (doc.contains("replace")) s.replace = doc["replace"];
    if (doc.contains("restripe")) s.restripe = doc["restripe"];
    for (const json& d : doc.at("drives")) {
      Drive drive;
      drive.index = d.at("index").get<uint64_t>();
      drive.name = d.at("name").get<std::string>();
      for (const char* k : kCounters)
        drive.values[k] = newer_counter(k) ? d.value(k, uint64_t{0}) : d.at(k).get<uint64_t>();
      for (const char* k : kGauges) drive.values[k] = d.at(k).get<uint64_t>();
      drive.stack_latency = parse_histogram(d.at("stack_latency"));
      drive.device_latency = parse_histogram(d.at("device_latency"));
      s.drives.push_back(std::move(drive));
    }
    std::sort(s.drives.begin(), s.drives.end(), [](const Drive& a, const Drive& b) { return a.index < b.index; });
    return s;
  } catch (const std::exception& e) {
    return Status::error(EBADMSG, root + ": bad statistics document in " + kStatsXattr + ": " + e.what());
  }
}

Expected<Snapshot> take_snapshot(const std::string& root) {
  auto text = read_xattr(root);
  if (!text) return text.status();
  return parse_snapshot(root, *text);
}

// ---- reports ----------------------------------------------------------------

struct Percentiles {
  uint64_t count = 0;
  uint64_t p50 = 0, p99 = 0, p999 = 0;  // bucket upper bounds in ns
};

// The same rank rule as LatencyHistogram::percentile.
Percentiles percentiles(const Histogram& h) {
  Percentiles p;
  for (const auto& [b, c] : h) p.count += c;
  if (p.count == 0) return p;
  auto at = [&](double pct) {
    uint64_t rank = static_cast<uint64_t>(pct / 100.0 * static_cast<double>(p.count) + 0.5);
    rank = std::clamp<uint64_t>(rank, 1, p.count);
    uint64_t seen = 0;
    for (const auto& [b, c] : h) {
      seen += c;
      if (seen >= rank) return LatencyHistogram::bucket_upper(b);
    }
    return LatencyHistogram::bucket_upper(h.rbegin()->first);
  };
  p.p50 = at(50);
  p.p99 = at(99);
  p.p999 = at(99.9);
  return p;
}

Histogram minus(const Histogram& now, const Histogram& before) {
  Histogram d;
  for (const auto& [b, c] : now) {
    auto it = before.find(b);
    uint64_t old = it == before.end() ? 0 : it->second;
    if (c > old) d[b] = c - old;
  }
  return d;
}

// One drive's line of a report: counters over the interval, rates when the
// interval is known.
struct Row {
  const Drive* drive;
  std::map<std::string, uint64_t> v;  // counters (deltas) and gauges (current)
  Percentiles stack, device;
};

struct Report {
  std::string mountpoint;
  bool since_mount = true;
  std::optional<double> seconds;  // interval length; none when unknown
  uint64_t time_ns = 0;
  std::vector<Row> rows;
  std::string transport;
  std::vector<uint64_t> ring_requests;  // in the interval
  uint64_t dev_fuse_requests = 0;       // since mount
  uint64_t ring_entries = 0;
  uint64_t ring_request_bytes = 0;
  ReadSpinCounts read_spin;  // counts in the interval
  json engine;
  json replace;
  json restripe;
};

Report make_report(const std::string& root, const Snapshot& now, const Snapshot* before) {
  Report r;
  r.mountpoint = root;
  r.time_ns = now.time_ns;
  r.since_mount = before == nullptr;
  r.transport = now.transport;
  r.ring_requests = now.ring_requests;
  r.dev_fuse_requests = now.dev_fuse_requests;
  r.ring_entries = now.ring_entries;
  r.engine = now.engine;
  r.replace = now.replace;
  r.restripe = now.restripe;
  r.ring_request_bytes = now.ring_request_bytes;
  r.read_spin = now.read_spin;
  if (before != nullptr && before->read_spin.present) {
    r.read_spin.requests_found -= std::min(r.read_spin.requests_found, before->read_spin.requests_found);
    r.read_spin.sleeps -= std::min(r.read_spin.sleeps, before->read_spin.sleeps);
  }
  if (before != nullptr && before->ring_requests.size() == now.ring_requests.size())
    for (size_t i = 0; i < r.ring_requests.size(); ++i)
      r.ring_requests[i] = r.ring_requests[i] >= before->ring_requests[i]
                               ? r.ring_requests[i] - before->ring_requests[i]
                               : r.ring_requests[i];
  if (before != nullptr) {
    r.seconds = static_cast<double>(now.time_ns - before->time_ns) / 1e9;
  } else if (now.mount_time_ns && *now.mount_time_ns < now.time_ns) {
    r.seconds = static_cast<double>(now.time_ns - *now.mount_time_ns) / 1e9;
  }
  for (const Drive& d : now.drives) {
    const Drive* old = nullptr;
    if (before != nullptr)
      for (const Drive& o : before->drives)
        if (o.index == d.index) old = &o;
    Row row{&d, d.values, {}, {}};
    if (old != nullptr)
      for (const char* k : kCounters) {
        uint64_t a = d.values.at(k), b = old->values.at(k);
        row.v[k] = a >= b ? a - b : a;  // a restarted daemon counts from zero
      }
    row.stack = percentiles(old ? minus(d.stack_latency, old->stack_latency) : d.stack_latency);
    row.device = percentiles(old ? minus(d.device_latency, old->device_latency) : d.device_latency);
    r.rows.push_back(std::move(row));
  }
  return r;
}

std::string human_ns(uint64_t ns, uint64_t count) {
  if (count == 0) return "-";
  char buf[32];
  if (ns < 1'000)
    std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
  else if (ns < 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1fus", static_cast<double>(ns) / 1e3);
  else if (ns < 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.1fms", static_cast<double>(ns) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string rate(uint64_t n, const std::optional<double>& seconds, double unit, const char* fmt) {
  if (!seconds || *seconds <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, static_cast<double>(n) / unit / *seconds);
  return buf;
}

// One line for the latest online replace: "replace: member 1 /a -> /b:
// copying 42% (430 of 1024 MiB in 0:12)", or done, or why it failed.
void print_replace(const json& rp) {
  const std::string state = rp.value("state", std::string("?"));
  const uint64_t done = rp.value("done_bytes", uint64_t{0}), total = rp.value("total_bytes", uint64_t{0});
  const double seconds = static_cast<double>(rp.value("elapsed_ms", uint64_t{0})) / 1000;
  std::printf("replace: member %llu %s -> %s: %s", static_cast<unsigned long long>(rp.value("member", uint64_t{0})),
              rp.value("old", std::string()).c_str(), rp.value("new", std::string()).c_str(), state.c_str());
  if (state == "copying" || state == "switching" || state == "done")
    std::printf(" %llu%% (%llu of %llu MiB in %.0f s)", static_cast<unsigned long long>(total ? done * 100 / total : 0),
                static_cast<unsigned long long>(done >> 20), static_cast<unsigned long long>(total >> 20), seconds);
  if (state == "failed") std::printf(": %s", rp.value("message", std::string()).c_str());
  std::printf("\n");
}

// One line for the latest online restripe: "restripe: 2 -> 4 members:
// moving 42% (430 of 1024 MiB in 0:12, 9 windows)", or done, or why it stopped.
void print_restripe(const json& rs) {
  const std::string state = rs.value("state", std::string("?"));
  const uint64_t done = rs.value("done_bytes", uint64_t{0}), total = rs.value("total_bytes", uint64_t{0});
  const double seconds = static_cast<double>(rs.value("elapsed_ms", uint64_t{0})) / 1000;
  std::printf("restripe: %llu -> %llu members: %s",
              static_cast<unsigned long long>(rs.value("old_members", uint64_t{0})),
              static_cast<unsigned long long>(rs.value("new_members", uint64_t{0})), state.c_str());
  if (state == "moving" || state == "done")
    std::printf(" %llu%% (%llu of %llu MiB in %.0f s, %llu windows)",
                static_cast<unsigned long long>(total ? done * 100 / total : 100),
                static_cast<unsigned long long>(done >> 20), static_cast<unsigned long long>(total >> 20), seconds,
                static_cast<unsigned long long>(rs.value("windows", uint64_t{0})));
  if (state == "stopped" || state == "refused") std::printf(": %s", rs.value("message", std::string()).c_str());
  std::printf("\n");
}

void print_text(const Report& r) {
  if (r.since_mount && r.seconds)
    std::printf("%s: since mount (%.1f s)\n", r.mountpoint.c_str(), *r.seconds);
  else if (r.since_mount)
    std::printf("%s: since mount\n", r.mountpoint.c_str());
  else
    std::printf("%s: last %.2f s\n", r.mountpoint.c_str(), *r.seconds);
  if (!r.transport.empty()) {
    std::string rings;
    for (uint64_t n : r.ring_requests) rings += " " + std::to_string(n);
    std::string shape;
    if (r.ring_entries != 0) {
      shape = ", " + std::to_string(r.ring_requests.size()) + " rings of " + std::to_string(r.ring_entries) + " x " +
              std::to_string(r.ring_request_bytes >> 10) + " KiB";
    }
    std::string spin;
    if (r.read_spin.present && (r.read_spin.requests_found != 0 || r.read_spin.sleeps != 0)) {
      spin = ", looks before sleeping found " + std::to_string(r.read_spin.requests_found) + " requests, slept " +
             std::to_string(r.read_spin.sleeps) + " times (window now " +
             std::to_string(r.read_spin.window_ns / 1000) + " us)";
    }
    std::printf("FUSE transport: %s%s%s%s%s\n", r.transport.c_str(), shape.c_str(),
                rings.empty() ? "" : ", requests per ring:", rings.c_str(), spin.c_str());
  }
  if (r.engine.is_object()) {
    // In sub-IOs: the watermarks count the whole volume's, the pressure
    // points each drive's.
    const json& e = r.engine;
    std::printf(
        "engine: %s scheduler, watermarks low %llu high %llu sub-IOs (volume), pressure %llu/%llu per drive, "
        "inline %s, poll %llu us\n",
        e.value("scheduler", std::string("?")).c_str(),
        static_cast<unsigned long long>(e.value("low_watermark", uint64_t{0})),
        static_cast<unsigned long long>(e.value("high_watermark", uint64_t{0})),
        static_cast<unsigned long long>(e.value("pressure_low", uint64_t{0})),
        static_cast<unsigned long long>(e.value("pressure_high", uint64_t{0})),
        e.value("inline_dispatch", false) ? "on" : "off",
        static_cast<unsigned long long>(e.value("inline_poll_us", uint64_t{0})));
  }
  if (r.replace.is_object()) print_replace(r.replace);
  if (r.restripe.is_object()) print_restripe(r.restripe);
  std::printf("%-3s %-28s %10s %9s %9s %9s %9s %9s %9s %15s %4s\n", "#", "member", "IOs", "IOPS", "MB read", "MB/s rd",
              "MB wr", "MB/s wr", "merged", "infl/backl/que", "QD");
  Row total{nullptr, {}, {}, {}};
  for (const Row& row : r.rows) {
    const auto& v = row.v;
    std::string q = std::to_string(v.at("in_flight")) + "/" + std::to_string(v.at("backlog")) + "/" +
                    std::to_string(v.at("queued"));
    std::string name = row.drive->name;
    if (name.size() > 28) name = "..." + name.substr(name.size() - 25);
    std::printf(
        "%-3llu %-28s %10llu %9s %9.1f %9s %9.1f %9s %9llu %15s %4llu\n",
        static_cast<unsigned long long>(row.drive->index), name.c_str(), static_cast<unsigned long long>(v.at("ios")),
        rate(v.at("ios"), r.seconds, 1, "%.0f").c_str(), static_cast<double>(v.at("bytes_read")) / 1e6,
        rate(v.at("bytes_read"), r.seconds, 1e6, "%.1f").c_str(), static_cast<double>(v.at("bytes_written")) / 1e6,
        rate(v.at("bytes_written"), r.seconds, 1e6, "%.1f").c_str(), static_cast<unsigned long long>(v.at("merged")),
        q.c_str(), static_cast<unsigned long long>(v.at("queue_depth")));
    for (const auto& [k, n] : v) total.v[k] += n;
  }
  if (r.rows.size() > 1) {
    const auto& v = total.v;
    std::printf("%-3s %-28s %10llu %9s %9.1f %9s %9.1f %9s %9llu\n", "", "all drives",
                static_cast<unsigned long long>(v.at("ios")), rate(v.at("ios"), r.seconds, 1, "%.0f").c_str(),
                static_cast<double>(v.at("bytes_read")) / 1e6, rate(v.at("bytes_read"), r.seconds, 1e6, "%.1f").c_str(),
                static_cast<double>(v.at("bytes_written")) / 1e6,
                rate(v.at("bytes_written"), r.seconds, 1e6, "%.1f").c_str(),
                static_cast<unsigned long long>(v.at("merged")));
  }
  std::printf("\n%-3s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n", "#", "sub-IOs", "tag waits",
              "press.wait", "errors", "stack p50", "p99", "p99.9", "device p50", "p99", "p99.9", "MB discard");
  for (const Row& row : r.rows) {
    const auto& v = row.v;
    std::printf(
        "%-3llu %10llu %10llu %10llu %10llu %10s %10s %10s %10s %10s %10s %10.1f\n",
        static_cast<unsigned long long>(row.drive->index), static_cast<unsigned long long>(v.at("subios")),
        static_cast<unsigned long long>(v.at("tag_waits")), static_cast<unsigned long long>(v.at("pressure_waits")),
        static_cast<unsigned long long>(v.at("errors")), human_ns(row.stack.p50, row.stack.count).c_str(),
        human_ns(row.stack.p99, row.stack.count).c_str(), human_ns(row.stack.p999, row.stack.count).c_str(),
        human_ns(row.device.p50, row.device.count).c_str(), human_ns(row.device.p99, row.device.count).c_str(),
        human_ns(row.device.p999, row.device.count).c_str(), static_cast<double>(v.at("discarded_bytes")) / 1e6);
  }
  std::fflush(stdout);
}

json rate_json(uint64_t n, const std::optional<double>& seconds, double unit) {
  if (!seconds || *seconds <= 0) return nullptr;
  return static_cast<double>(n) / unit / *seconds;
}

json latency_json(const Percentiles& p) {
  return json{{"count", p.count}, {"p50", p.p50}, {"p99", p.p99}, {"p99.9", p.p999}};
}

json report_json(const Report& r) {
  json out;
  out["mountpoint"] = r.mountpoint;
  out["since_mount"] = r.since_mount;
  out["time_ns"] = r.time_ns;
  out["seconds"] = r.seconds ? json(*r.seconds) : json(nullptr);
  if (!r.transport.empty()) {
    out["transport"] =
        json{{"name", r.transport}, {"ring_requests", r.ring_requests}, {"dev_fuse_requests", r.dev_fuse_requests}};
    if (r.ring_entries != 0) {
      out["transport"]["ring_entries"] = r.ring_entries;
      out["transport"]["ring_request_bytes"] = r.ring_request_bytes;
    }
    if (r.read_spin.present) {
      out["transport"]["read_spin"] = json{{"window_ns", r.read_spin.window_ns},
                                           {"requests_found", r.read_spin.requests_found},
                                           {"sleeps", r.read_spin.sleeps}};
    }
  }
  if (r.engine.is_object()) out["engine"] = r.engine;
  if (r.replace.is_object()) out["replace"] = r.replace;
  if (r.restripe.is_object()) out["restripe"] = r.restripe;
  out["drives"] = json::array();
  std::map<std::string, uint64_t> total;
  for (const Row& row : r.rows) {
    json d;
    d["index"] = row.drive->index;
    d["name"] = row.drive->name;
    for (const auto& [k, n] : row.v) {
      d[k] = n;
      total[k] += n;
    }
    d["iops"] = rate_json(row.v.at("ios"), r.seconds, 1);
    d["read_mb_s"] = rate_json(row.v.at("bytes_read"), r.seconds, 1e6);
    d["write_mb_s"] = rate_json(row.v.at("bytes_written"), r.seconds, 1e6);
    d["stack_latency_ns"] = latency_json(row.stack);
    d["device_latency_ns"] = latency_json(row.device);
    out["drives"].push_back(std::move(d));
  }
  json t;
  for (const char* k : kCounters) t[k] = total[k];
  t["iops"] = rate_json(total["ios"], r.seconds, 1);
  t["read_mb_s"] = rate_json(total["bytes_read"], r.seconds, 1e6);
  t["write_mb_s"] = rate_json(total["bytes_written"], r.seconds, 1e6);
  out["total"] = std::move(t);
  return out;
}

int fail(const Status& s) {
  std::fprintf(stderr, "peregrine stats: %s\n", s.message().c_str());
  return 1;
}

// ---- --prometheus -----------------------------------------------------------

Expected<std::string> prometheus_snapshot(const MountEntry& mount) {
  auto text = read_xattr(mount.mountpoint);
  if (!text) return text.status();
  // The volume's name for a daemon too old to put it in the document: the
  // mount source, "peregrine:LABEL" or "peregrine:UUID".
  std::string fallback = mount.source.rfind("peregrine:", 0) == 0 ? mount.source.substr(10) : mount.source;
  try {
    return prometheus_text(json::parse(*text), mount.mountpoint, fallback);
  } catch (const std::exception& e) {
    return Status::error(EBADMSG, mount.mountpoint + ": bad statistics document in " + kStatsXattr + ": " + e.what());
  }
}

// The statistics cannot be read. Numbers that stayed in `output` after
// the volume is gone would be collected as if current: remove the file
// instead, so that the volume's series disappear.
int give_up(const Status& s, const std::string& output) {
  if (!output.empty() && ::unlink(output.c_str()) == 0) {
    std::fprintf(stderr, "peregrine stats: %s (removed %s so that no stale numbers are collected)\n",
                 s.message().c_str(), output.c_str());
    return 1;
  }
  return fail(s);
}

// Prints the exposition, or writes it to `output` every `watch` seconds
// (once without). Totals since mount every time: Prometheus computes the
// rates itself.
int run_prometheus(const MountEntry& mount, const std::string& output, std::optional<double> watch,
                   std::optional<uint64_t> count) {
  for (uint64_t n = 0; !count || n < *count; ++n) {
    if (n > 0) std::this_thread::sleep_for(std::chrono::duration<double>(*watch));
    auto text = prometheus_snapshot(mount);
    if (!text) return give_up(text.status(), output);
    if (output.empty()) {
      std::fwrite(text->data(), 1, text->size(), stdout);
      std::fflush(stdout);
    } else if (Status st = replace_file(output, *text); !st) {
      return fail(st);
    }
    if (!watch) break;
  }
  return 0;
}

// The command line, as read.
struct StatsArgs {
  std::string mountpoint;
  bool as_json = false;
  bool prometheus = false;
  std::optional<double> watch;  // seconds between reports
  std::optional<uint64_t> count;
  bool output_given = false;
  std::string output;  // --prometheus's file; empty: stdout
};

// Reads the command line into *args. Returns an exit code when the command
// ends here (--help, or a usage error said on stderr), -1 to go on.
int parse_stats_args(int argc, char** argv, StatsArgs* args) {
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "print this help")("watch,w", po::value<double>()->value_name("SECONDS"),
                                                  "report every SECONDS (may be fractional)")(
      "count,c", po::value<uint64_t>()->value_name("N"), "stop after N reports (with --watch; implies --watch 1)")(
      "json", "machine-readable output: one JSON document, or one per line with --watch")(
      "prometheus", "the totals since mount in the Prometheus text exposition format (0.0.4)")(
      "output,o", po::value<std::string>()->value_name("FILE"),
      "with --prometheus: replace FILE atomically instead of printing (for node_exporter's textfile "
      "collector: name it *.prom in its directory)");
  po::options_description hidden;
  hidden.add_options()("mountpoint", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("mountpoint", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "peregrine stats: %s\n\n", e.what());
    std::cerr << opts << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nLatencies are upper bounds of histogram buckets (4 per power of two, at most\n"
                 "19% high). Without --watch, IOPS and MB/s need the mount time: a daemon that\n"
                 "does not publish it shows '-' for the rates there.\n\n"
                 "--output writes a temporary file beside FILE, fsyncs it and renames it over\n"
                 "FILE, so a reader sees a whole file. When the statistics cannot be read (the\n"
                 "volume was unmounted), FILE is removed rather than left stale, and the\n"
                 "command exits 1. Example, every 15 s:\n"
                 "  peregrine stats --prometheus --watch 15 \\\n"
                 "      --output /var/lib/prometheus/node-exporter/peregrine-data.prom /mnt/data\n";
    return 0;
  }
  if (!vm.count("mountpoint") || vm["mountpoint"].as<std::vector<std::string>>().size() != 1) {
    std::fprintf(stderr, "peregrine stats: give exactly one MOUNTPOINT\n\n");
    std::cerr << opts << "\n";
    return 2;
  }
  args->mountpoint = vm["mountpoint"].as<std::vector<std::string>>()[0];
  args->as_json = vm.count("json") > 0;
  if (vm.count("watch")) args->watch = vm["watch"].as<double>();
  if (vm.count("count")) {
    args->count = vm["count"].as<uint64_t>();
    if (!args->watch) args->watch = 1.0;
  }
  args->prometheus = vm.count("prometheus") > 0;
  args->output_given = vm.count("output") > 0;
  if (args->output_given) args->output = vm["output"].as<std::string>();
  return -1;
}

// The options that do not go together; 2 (said on stderr) or 0.
int check_stats_args(const StatsArgs& a) {
  if (a.watch && !(*a.watch > 0 && *a.watch <= 86400)) {
    // 0 is outside the range: a report over no time says nothing.
    std::fprintf(stderr,
                 "peregrine stats: --watch %g: the interval must be more than 0 and at most 86400 seconds "
                 "(leave --watch out for one report)\n",
                 *a.watch);
    return 2;
  }
  if (a.count && *a.count == 0) {
    std::fprintf(stderr, "peregrine stats: --count must be at least 1\n");
    return 2;
  }
  if (a.prometheus && a.as_json) {
    std::fprintf(stderr, "peregrine stats: --prometheus and --json are two formats: give one\n");
    return 2;
  }
  if (a.output_given && !a.prometheus) {
    std::fprintf(stderr, "peregrine stats: --output writes the Prometheus format: add --prometheus\n");
    return 2;
  }
  if (a.output_given && a.output.empty()) {
    std::fprintf(stderr, "peregrine stats: --output needs a file name\n");
    return 2;
  }
  if (a.prometheus && a.watch && a.output.empty()) {
    // A stream of expositions on stdout is nothing a collector can read.
    std::fprintf(stderr,
                 "peregrine stats: --prometheus with --watch rewrites a file every interval: give --output FILE\n");
    return 2;
  }
  return 0;
}

// The text or JSON reports: one, or one per interval with --watch.
int run_reports(const std::string& root, const StatsArgs& a) {
  auto first = take_snapshot(root);
  if (!first) return fail(first.status());
  auto emit = [&](const Report& r) {
    if (a.as_json) {
      std::printf("%s\n", a.watch ? report_json(r).dump().c_str() : report_json(r).dump(2).c_str());
      std::fflush(stdout);
    } else {
      print_text(r);
    }
  };
  if (!a.watch) {
    emit(make_report(root, *first, nullptr));
    return 0;
  }
  Snapshot before = std::move(*first);
  for (uint64_t n = 0; !a.count || n < *a.count; ++n) {
    std::this_thread::sleep_for(std::chrono::duration<double>(*a.watch));
    auto now = take_snapshot(root);
    if (!now) return fail(now.status());
    if (!a.as_json && n > 0) std::printf("\n");
    emit(make_report(root, *now, &before));
    before = std::move(*now);
  }
  return 0;
}

}  // namespace

int cmd_stats(int argc, char** argv) {
  StatsArgs args;
  if (int rc = parse_stats_args(argc, argv, &args); rc >= 0) return rc;
  if (int rc = check_stats_args(args); rc != 0) return rc;
  auto mount = peregrine_mount(args.mountpoint);
  if (!mount) return give_up(mount.status(), args.output);
  if (args.prometheus) return run_prometheus(*mount, args.output, args.watch, args.count);
  return run_reports(mount->mountpoint, args);
}

}  // namespace peregrine::cli
