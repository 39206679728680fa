// The Prometheus exposition of a statistics document (prometheus_format.h).
#include "prometheus_format.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include "peregrine/engine/drive_stats.h"

namespace peregrine::cli {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

// The histogram bounds exposed: the top of each power of two from 2^9 ns
// (1.023 us) to 2^34 ns (17.18 s). The daemon keeps 4 buckets per power of
// two; a bound at every one of them would multiply the series a fleet
// stores by 4 for little gain, and a bucket's top is where a count "<= le"
// is exact. Fixed, so the series stay the same from one scrape to the next.
constexpr int kFirstPower = 9;
constexpr int kLastPower = 33;

// The daemon's bucket whose top is 2^(power + 1) - 1 ns.
int top_bucket_of_power(int power) { return LatencyHistogram::bucket_of((uint64_t{2} << power) - 1); }

std::string render(const Labels& labels) {
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    out += (i ? "," : "") + labels[i].first + "=\"" + prometheus_label_value(labels[i].second) + "\"";
  }
  return out + "}";
}

Labels with(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

// Writes families one at a time: HELP and TYPE, then every sample of the
// family, as the format wants them grouped.
class Exposition {
 public:
  void family(const std::string& name, const char* type, const char* help) {
    text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& name, const Labels& labels, const std::string& value) {
    text_ += name + render(labels) + " " + value + "\n";
  }
  void sample(const std::string& name, const Labels& labels, uint64_t value) {
    sample(name, labels, std::to_string(value));
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

struct DriveMetric {
  const char* field;  // in the document's drive object
  const char* name;
  const char* help;
};

constexpr DriveMetric kDriveCounters[] = {
    {"subios", "peregrine_drive_subios_total",
     "Sub-IOs the drive received (the pieces of file IO that fall on this member)."},
    {"merged", "peregrine_drive_merged_subios_total", "Sub-IOs that joined a neighbour's IO rather than going alone."},
    {"tag_waits", "peregrine_drive_tag_waits_total", "IOs that found no free device tag and waited for one."},
    {"pressure_waits", "peregrine_drive_pressure_waits_total",
     "Times a submitting worker blocked because the drive's queue was at its high pressure point."},
    {"inline_batches", "peregrine_drive_inline_batches_total",
     "Batches dispatched by a submitting thread rather than the drive's thread."},
    {"short_ios", "peregrine_drive_short_ios_total", "Transfers resubmitted after the device did less than asked."},
    {"errors", "peregrine_drive_errors_total", "IOs the device failed."},
    {"retried_unmerged", "peregrine_drive_retried_unmerged_total", "Failed merged IOs re-sent piece by piece."},
};

// Discards (fstrim, -o discard); absent from daemons of older releases.
constexpr DriveMetric kDiscardCounters[] = {
    {"discards", "peregrine_drive_discards_total", "Discard (TRIM) calls sent to the member, one span each."},
    {"discarded_bytes", "peregrine_drive_discarded_bytes_total",
     "Bytes the member was told to discard (BLKDISCARD, or holes punched in a member file)."},
    {"discard_errors", "peregrine_drive_discard_errors_total",
     "Discards the member failed (the space stays in use by nothing; it is only not trimmed)."},
};

constexpr DriveMetric kDriveGauges[] = {
    {"in_flight", "peregrine_drive_in_flight_ios", "IOs on the device."},
    {"backlog", "peregrine_drive_backlog_ios", "IOs waiting for a free device tag."},
    {"queued", "peregrine_drive_queued_subios", "Sub-IOs received and not yet dispatched."},
    {"queue_depth", "peregrine_drive_queue_depth", "Device tags: the most IOs the drive keeps on the device at once."},
};

struct Drive {
  Labels labels;  // volume, mountpoint, drive, member
  const json* doc;
};

bool all_have(const std::vector<Drive>& drives, const char* field) {
  return std::all_of(drives.begin(), drives.end(), [&](const Drive& d) { return d.doc->contains(field); });
}

void histogram(Exposition& out, const std::vector<Drive>& drives, const char* field, const std::string& name,
               const char* help) {
  const std::string sum_field = std::string(field) + "_sum_ns";
  if (!all_have(drives, sum_field.c_str())) return;  // an older daemon: no sums, so no histogram
  out.family(name, "histogram", help);
  for (const Drive& d : drives) {
    std::array<uint64_t, LatencyHistogram::kBuckets> counts{};
    uint64_t total = 0;
    for (const json& pair : d.doc->at(field)) {
      int bucket = pair.at(0).get<int>();
      if (bucket < 0 || bucket >= LatencyHistogram::kBuckets)
        throw std::out_of_range("latency bucket " + std::to_string(bucket) + " out of range");
      uint64_t n = pair.at(1).get<uint64_t>();
      counts[static_cast<size_t>(bucket)] += n;
      total += n;
    }
    // Cumulative, as the format wants: each le counts every observation
    // at or below it.
    uint64_t below = 0;
    int next = 0;
    for (int power = kFirstPower; power <= kLastPower; ++power) {
      const int top = top_bucket_of_power(power);
      for (; next <= top; ++next) below += counts[static_cast<size_t>(next)];
      out.sample(name + "_bucket", with(d.labels, "le", prometheus_seconds(LatencyHistogram::bucket_upper(top))),
                 below);
    }
    out.sample(name + "_bucket", with(d.labels, "le", "+Inf"), total);
    out.sample(name + "_sum", d.labels, prometheus_seconds(d.doc->at(sum_field).get<uint64_t>()));
    out.sample(name + "_count", d.labels, total);
  }
}

void volume_metrics(Exposition& out, const json& doc, const Labels& base) {
  const json* vol = doc.contains("volume") ? &doc["volume"] : nullptr;
  out.family("peregrine_volume_info", "gauge",
             "Always 1: the volume's label, UUID and the FUSE transport that serves it.");
  Labels info = base;
  info.emplace_back("label", vol ? vol->at("label").get<std::string>() : "");
  info.emplace_back("uuid", vol ? vol->at("uuid").get<std::string>() : "");
  info.emplace_back("transport", doc.contains("transport") ? doc["transport"].at("name").get<std::string>() : "");
  out.sample("peregrine_volume_info", info, 1);

  if (doc.contains("mount_time_ns")) {
    uint64_t now = doc.at("time_ns").get<uint64_t>(), since = doc["mount_time_ns"].get<uint64_t>();
    out.family("peregrine_volume_uptime_seconds", "gauge", "Time since the volume was mounted.");
    out.sample("peregrine_volume_uptime_seconds", base, prometheus_seconds(now >= since ? now - since : 0));
  }

  if (doc.contains("space")) {
    const json& s = doc["space"];
    out.family("peregrine_volume_size_bytes", "gauge", "Size of the data area (statfs f_blocks).");
    out.sample("peregrine_volume_size_bytes", base, s.at("total_bytes").get<uint64_t>());
    out.family("peregrine_volume_free_bytes", "gauge", "Free bytes of the data area (statfs f_bfree).");
    out.sample("peregrine_volume_free_bytes", base, s.at("free_bytes").get<uint64_t>());
    out.family("peregrine_volume_avail_bytes", "gauge",
               "Free bytes that can still be written: 0 once the metadata area cannot map more (statfs f_bavail).");
    out.sample("peregrine_volume_avail_bytes", base, s.at("avail_bytes").get<uint64_t>());
    out.family("peregrine_volume_files_free", "gauge",
               "About how many more files the metadata area has room for (statfs f_ffree).");
    out.sample("peregrine_volume_files_free", base, s.at("files_free").get<uint64_t>());
  }

  if (doc.contains("metadata")) {
    const json& m = doc["metadata"];
    out.family("peregrine_metadata_capacity_bytes", "gauge",
               "Size of the metadata area's checkpoint body: new files fail with ENOSPC as use nears it.");
    out.sample("peregrine_metadata_capacity_bytes", base, m.at("capacity_bytes").get<uint64_t>());
    out.family("peregrine_metadata_used_bytes", "gauge", "Bytes of the metadata area in use.");
    out.sample("peregrine_metadata_used_bytes", base, m.at("used_bytes").get<uint64_t>());
    out.family("peregrine_metadata_inodes", "gauge", "Inodes in use, the root included.");
    out.sample("peregrine_metadata_inodes", base, m.at("inodes").get<uint64_t>());
    out.family("peregrine_metadata_write_failed", "gauge",
               "1 once a journal or checkpoint write failed: the volume refuses changes until remounted.");
    out.sample("peregrine_metadata_write_failed", base, m.at("write_failed").get<bool>() ? 1 : 0);
  }

  if (doc.contains("discard")) {
    const json& d = doc["discard"];
    out.family("peregrine_volume_discarded_bytes_total", "counter",
               "Bytes discarded on the members, by fstrim (by=\"fstrim\") or as freed with -o discard "
               "(by=\"online\").");
    out.sample("peregrine_volume_discarded_bytes_total", with(base, "by", "fstrim"),
               d.at("fstrim_bytes").get<uint64_t>());
    out.sample("peregrine_volume_discarded_bytes_total", with(base, "by", "online"),
               d.at("online_bytes").get<uint64_t>());
    out.family("peregrine_volume_fstrim_runs_total", "counter", "FITRIM requests (fstrim runs) served.");
    out.sample("peregrine_volume_fstrim_runs_total", base, d.at("fstrim_runs").get<uint64_t>());
    out.family("peregrine_volume_discard_pending_bytes", "gauge",
               "Freed bytes waiting for their discard or being discarded now (counted free).");
    out.sample("peregrine_volume_discard_pending_bytes", base, d.at("pending_bytes").get<uint64_t>());
  }

  if (doc.contains("replace")) {
    // The latest online replace of this mount; labels name its members.
    const json& rp = doc["replace"];
    auto labels = with(with(with(base, "member", std::to_string(rp.at("member").get<uint64_t>())), "old",
                            rp.at("old").get<std::string>()),
                       "new", rp.at("new").get<std::string>());
    const std::string state = rp.at("state").get<std::string>();
    out.family("peregrine_replace_active", "gauge",
               "1 while an online replace copies or switches a member, else 0 (its last state in peregrine stats).");
    out.sample("peregrine_replace_active", labels, state == "copying" || state == "switching" ? 1 : 0);
    out.family("peregrine_replace_copied_bytes", "gauge", "Bytes of the member the online replace has copied.");
    out.sample("peregrine_replace_copied_bytes", labels, rp.at("done_bytes").get<uint64_t>());
    out.family("peregrine_replace_total_bytes", "gauge", "Bytes of the member the online replace copies in all.");
    out.sample("peregrine_replace_total_bytes", labels, rp.at("total_bytes").get<uint64_t>());
    out.family("peregrine_replace_failed", "gauge", "1 if the latest online replace gave up (the old member stays).");
    out.sample("peregrine_replace_failed", labels, state == "failed" ? 1 : 0);
  }

  if (doc.contains("restripe")) {
    // The latest online restripe of this mount (peregrine grow --add).
    const json& rs = doc["restripe"];
    auto labels = with(with(base, "old_members", std::to_string(rs.at("old_members").get<uint64_t>())), "new_members",
                       std::to_string(rs.at("new_members").get<uint64_t>()));
    const std::string state = rs.at("state").get<std::string>();
    out.family("peregrine_restripe_active", "gauge",
               "1 while an online restripe moves the volume's stripe units onto more members, else 0.");
    out.sample("peregrine_restripe_active", labels, state == "moving" ? 1 : 0);
    out.family("peregrine_restripe_moved_bytes", "gauge", "Bytes the online restripe has moved.");
    out.sample("peregrine_restripe_moved_bytes", labels, rs.at("done_bytes").get<uint64_t>());
    out.family("peregrine_restripe_total_bytes", "gauge", "Bytes the online restripe moves in all.");
    out.sample("peregrine_restripe_total_bytes", labels, rs.at("total_bytes").get<uint64_t>());
    out.family("peregrine_restripe_stopped", "gauge",
               "1 if the latest online restripe stopped part-way (finish it offline: peregrine grow --add).");
    out.sample("peregrine_restripe_stopped", labels, state == "stopped" ? 1 : 0);
  }

  if (doc.contains("tail_blocks")) {
    const json& t = doc["tail_blocks"];
    out.family("peregrine_tail_blocks", "gauge",
               "Files whose partial last block the daemon keeps in memory now (fuse.tail_blocks).");
    out.sample("peregrine_tail_blocks", base, t.at("live").get<uint64_t>());
    out.family("peregrine_tail_block_writes_total", "counter",
               "Small writes that patched a kept last block instead of reading and writing it on the members.");
    out.sample("peregrine_tail_block_writes_total", base, t.at("absorbed").get<uint64_t>());
    out.family("peregrine_tail_block_write_backs_total", "counter",
               "Kept last blocks written back to the members (before a commit, at fsync, or for another write).");
    out.sample("peregrine_tail_block_write_backs_total", base, t.at("written_back").get<uint64_t>());
  }

  if (doc.contains("read_blocks")) {
    const json& r = doc["read_blocks"];
    out.family("peregrine_read_block_hits_total", "counter",
               "Reads smaller than a block answered from a block kept in memory (fuse.read_blocks).");
    out.sample("peregrine_read_block_hits_total", base, r.at("hits").get<uint64_t>());
    out.family("peregrine_read_blocks_kept_total", "counter", "Blocks of small reads kept in memory.");
    out.sample("peregrine_read_blocks_kept_total", base, r.at("kept").get<uint64_t>());
  }

  if (doc.contains("transport")) {
    const json& t = doc["transport"];
    const json& rings = t.at("ring_requests");
    if (!rings.empty()) {
      out.family("peregrine_fuse_ring_requests_total", "counter",
                 "FUSE requests served by each io-uring ring (one ring per CPU).");
      for (size_t i = 0; i < rings.size(); ++i)
        out.sample("peregrine_fuse_ring_requests_total", with(base, "ring", std::to_string(i)),
                   rings[i].get<uint64_t>());
    }
    out.family("peregrine_fuse_dev_fuse_requests_total", "counter",
               "Requests other than INIT, FORGET, INTERRUPT and DESTROY that came over /dev/fuse after the io-uring "
               "rings were registered (0 in normal operation).");
    out.sample("peregrine_fuse_dev_fuse_requests_total", base, t.value("dev_fuse_requests", uint64_t{0}));
    if (t.contains("read_spin")) {
      const json& spin = t["read_spin"];
      out.family("peregrine_fuse_read_spin_requests_found_total", "counter",
                 "Requests a classic worker (or, on io-uring, a ring) found while looking for one before "
                 "sleeping (fuse.read_spin_us).");
      out.sample("peregrine_fuse_read_spin_requests_found_total", base, spin.value("requests_found", uint64_t{0}));
      out.family("peregrine_fuse_read_spin_sleeps_total", "counter",
                 "Times the looking worker or ring found no request and slept.");
      out.sample("peregrine_fuse_read_spin_sleeps_total", base, spin.value("sleeps", uint64_t{0}));
      out.family("peregrine_fuse_read_spin_window_seconds", "gauge",
                 "How long a worker or ring now looks for a request before it sleeps.");
      out.sample("peregrine_fuse_read_spin_window_seconds", base,
                 prometheus_seconds(spin.value("window_ns", uint64_t{0})));
    }
    if (t.contains("lone_follow")) {
      const json& follow = t["lone_follow"];
      out.family("peregrine_fuse_lone_follow_runs_total", "counter",
                 "Runs of one program's metadata requests whose classic reader followed the program to its CPU "
                 "(fuse.follow_lone_caller).");
      out.sample("peregrine_fuse_lone_follow_runs_total", base, follow.value("runs", uint64_t{0}));
      out.family("peregrine_fuse_lone_follow_stalls_total", "counter",
                 "Times a waiting worker found the following reader kept off its CPU and took over.");
      out.sample("peregrine_fuse_lone_follow_stalls_total", base, follow.value("stalls", uint64_t{0}));
    }
  }
}

void drive_metrics(Exposition& out, const std::vector<Drive>& drives) {
  if (all_have(drives, "read_ios") && all_have(drives, "write_ios")) {
    out.family("peregrine_drive_ios_total", "counter", "IOs sent to the device, after merging, by operation.");
    for (const Drive& d : drives) {
      out.sample("peregrine_drive_ios_total", with(d.labels, "op", "read"), d.doc->at("read_ios").get<uint64_t>());
      out.sample("peregrine_drive_ios_total", with(d.labels, "op", "write"), d.doc->at("write_ios").get<uint64_t>());
      out.sample("peregrine_drive_ios_total", with(d.labels, "op", "flush"), d.doc->at("flushes").get<uint64_t>());
    }
  }
  out.family("peregrine_drive_bytes_total", "counter", "Bytes read from and written to the device.");
  for (const Drive& d : drives) {
    out.sample("peregrine_drive_bytes_total", with(d.labels, "op", "read"), d.doc->at("bytes_read").get<uint64_t>());
    out.sample("peregrine_drive_bytes_total", with(d.labels, "op", "write"),
               d.doc->at("bytes_written").get<uint64_t>());
  }
  for (const DriveMetric& m : kDriveCounters) {
    out.family(m.name, "counter", m.help);
    for (const Drive& d : drives) out.sample(m.name, d.labels, d.doc->at(m.field).get<uint64_t>());
  }
  for (const DriveMetric& m : kDriveGauges) {
    out.family(m.name, "gauge", m.help);
    for (const Drive& d : drives) out.sample(m.name, d.labels, d.doc->at(m.field).get<uint64_t>());
  }
  if (all_have(drives, "discarded_bytes")) {
    for (const DriveMetric& m : kDiscardCounters) {
      out.family(m.name, "counter", m.help);
      for (const Drive& d : drives) out.sample(m.name, d.labels, d.doc->at(m.field).get<uint64_t>());
    }
  }
  histogram(out, drives, "stack_latency", "peregrine_drive_stack_latency_seconds",
            "Time sub-IOs spent in peregrine's queues, from arrival to dispatch to the device.");
  histogram(out, drives, "device_latency", "peregrine_drive_device_latency_seconds",
            "Device latency of IOs, from dispatch to completion.");
}

}  // namespace

std::string prometheus_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string prometheus_seconds(uint64_t ns) {
  std::string out = std::to_string(ns / 1'000'000'000);
  uint64_t frac = ns % 1'000'000'000;
  if (frac == 0) return out;
  std::string digits = std::to_string(frac);
  digits.insert(0, 9 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return out + "." + digits;
}

std::string prometheus_text(const json& doc, const std::string& mountpoint, const std::string& fallback_volume) {
  std::string volume = fallback_volume;
  if (doc.contains("volume")) {
    volume = doc["volume"].at("label").get<std::string>();
    if (volume.empty()) volume = doc["volume"].at("uuid").get<std::string>();
  }
  const Labels base{{"volume", volume}, {"mountpoint", mountpoint}};

  std::vector<Drive> drives;
  for (const json& d : doc.at("drives"))
    drives.push_back(Drive{with(with(base, "drive", std::to_string(d.at("index").get<uint64_t>())), "member",
                                d.at("name").get<std::string>()),
                           &d});
  std::sort(drives.begin(), drives.end(), [](const Drive& a, const Drive& b) {
    return a.doc->at("index").get<uint64_t>() < b.doc->at("index").get<uint64_t>();
  });

  Exposition out;
  volume_metrics(out, doc, base);
  drive_metrics(out, drives);
  return out.take();
}

}  // namespace peregrine::cli
