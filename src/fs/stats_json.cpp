// The per-drive statistics document (see docs/usage.md for its fields).
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "fs_context.h"
#include "online_replace.h"
#include "online_restripe.h"
#include "transport/transport.h"
#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void histogram(std::ostringstream& out, const LatencyHistogram& h) {
  out << "[";
  bool first = true;
  // Only non-empty buckets; a reader rebuilds the histogram from them.
  for (int b = 0; b < LatencyHistogram::kBuckets; ++b) {
    uint64_t n = h.bucket_count(b);
    if (n == 0) continue;
    out << (first ? "" : ",") << "[" << b << "," << n << "]";
    first = false;
  }
  out << "]";
}

// The member's path; after an online replace, the new member's.
std::string member_name(const FsContext& fs, uint32_t d) {
  if (fs.online_replace != nullptr)
    if (std::string now = fs.online_replace->member_path(d); !now.empty()) return now;
  if (fs.online_restripe != nullptr)
    if (std::string added = fs.online_restripe->member_path(d); !added.empty()) return added;
  return d < fs.member_names.size() ? fs.member_names[d] : "";
}

const char* replace_state_name(uint32_t s) {
  switch (s) {
    case kReplaceCopying:
      return "copying";
    case kReplaceSwitching:
      return "switching";
    case kReplaceDone:
      return "done";
    case kReplaceFailed:
      return "failed";
    default:
      return "none";
  }
}

// The latest online replace of this mount (online_replace.h), if any.
void replace_json(std::ostringstream& out, const FsContext& fs) {
  if (fs.online_replace == nullptr) return;
  const ReplaceIoctl r = fs.online_replace->status();
  if (r.state == kReplaceNone) return;
  out << ",\"replace\":{\"state\":\"" << replace_state_name(r.state) << "\",\"member\":" << r.member_index
      << ",\"old\":" << quoted(r.old_member) << ",\"new\":" << quoted(r.new_member)
      << ",\"done_bytes\":" << r.done_bytes << ",\"total_bytes\":" << r.total_bytes
      << ",\"elapsed_ms\":" << r.elapsed_ms << ",\"rate_limit_bytes\":" << r.rate_limit_bytes
      << ",\"message\":" << quoted(r.message) << "}";
}

const char* restripe_state_name(uint32_t s) {
  switch (s) {
    case kRestripeMoving:
      return "moving";
    case kRestripeDone:
      return "done";
    case kRestripeStopped:
      return "stopped";
    case kRestripeRefused:
      return "refused";
    default:
      return "none";
  }
}

// The latest online restripe of this mount (online_restripe.h), if any.
void restripe_json(std::ostringstream& out, const FsContext& fs) {
  if (fs.online_restripe == nullptr) return;
  const RestripeIoctl r = fs.online_restripe->status();
  if (r.state == kRestripeNone) return;
  out << ",\"restripe\":{\"state\":\"" << restripe_state_name(r.state) << "\",\"old_members\":" << r.old_count
      << ",\"new_members\":" << r.new_count << ",\"done_bytes\":" << r.done_bytes
      << ",\"total_bytes\":" << r.total_bytes << ",\"windows\":" << r.windows << ",\"elapsed_ms\":" << r.elapsed_ms
      << ",\"rate_limit_bytes\":" << r.rate_limit_bytes << ",\"message\":" << quoted(r.message) << "}";
}

}  // namespace

std::string stats_json(FsContext& fs) {
  Engine& e = fs.pool.engine();
  std::ostringstream out;
  // pid: the daemon serving the mount, for umount.fuse.peregrine to wait on.
  // read_only: the daemon writes nothing (mounted ro, or a metadata write
  // failed); a remount,rw cannot change that (mount.peregrine asks).
  const bool read_only = fs.meta.mount_report().read_only || fs.meta.write_failed();
  out << "{\"time_ns\":" << monotonic_ns() << ",\"mount_time_ns\":" << fs.mount_time_ns << ",\"pid\":" << ::getpid()
      << ",\"read_only\":" << (read_only ? "true" : "false");
  // The batching and back-pressure the engine applies, as resolved from
  // the settings (per-drive values times the member count, defaults filled
  // in, and again after an online restripe): what a user tuning the config
  // file wants to see in effect.
  const EngineConfig& c = e.config();
  out << ",\"engine\":{\"scheduler\":\"" << (c.scheduler == Scheduler::per_drive ? "per-drive" : "per-volume")
      << "\",\"low_watermark\":" << e.low_watermark() << ",\"high_watermark\":" << e.high_watermark()
      << ",\"inline_dispatch\":" << (c.inline_dispatch ? "true" : "false")
      << ",\"inline_poll_us\":" << c.inline_poll_ns / 1000 << ",\"pressure_low\":" << c.pressure_low
      << ",\"pressure_high\":" << c.pressure_high << "}";
  out << ",\"drives\":[";
  for (uint32_t d = 0; d < e.drive_count(); ++d) {
    DriveStats s = e.stats(d);
    out << (d ? "," : "") << "{\"index\":" << d
        << ",\"name\":" << quoted(member_name(fs, d))
        << ",\"queue_depth\":" << s.queue_depth << ",\"subios\":" << s.subios << ",\"ios\":" << s.ios
        << ",\"read_ios\":" << s.read_ios << ",\"write_ios\":" << s.write_ios << ",\"merged\":" << s.merged
        << ",\"bytes_read\":" << s.bytes_read << ",\"bytes_written\":" << s.bytes_written
        << ",\"flushes\":" << s.flushes << ",\"tag_waits\":" << s.tag_waits
        << ",\"pressure_waits\":" << s.pressure_waits << ",\"inline_batches\":" << s.inline_batches
        << ",\"polled\":" << s.polled << ",\"holds\":" << s.holds << ",\"short_ios\":" << s.short_ios
        << ",\"errors\":" << s.errors
        << ",\"retried_unmerged\":" << s.retried_unmerged << ",\"backlog\":" << s.backlog << ",\"queued\":" << s.queued
        << ",\"in_flight\":" << s.in_flight << ",\"stack_latency\":";
    histogram(out, s.stack_latency);
    out << ",\"stack_latency_sum_ns\":" << s.stack_latency.sum_ns() << ",\"device_latency\":";
    histogram(out, s.device_latency);
    out << ",\"device_latency_sum_ns\":" << s.device_latency.sum_ns();
    // Discards (fstrim, -o discard) do not pass through the engine.
    const DiscardCounts dc = fs.sync_io.discard_counts(d);
    out << ",\"discards\":" << dc.discards << ",\"discarded_bytes\":" << dc.bytes << ",\"discard_errors\":" << dc.errors
        << "}";
  }
  out << "]";
  replace_json(out, fs);
  restripe_json(out, fs);
  out << ",\"volume\":{\"label\":" << quoted(fs.volume_label) << ",\"uuid\":" << quoted(fs.volume_uuid) << "}";
  // The data area as statfs reports it, and the metadata area's use (what
  // `peregrine info` shows; new files fail with ENOSPC when it is full).
  meta::StatFs sf;
  if (fs.meta.statfs(&sf) == 0)
    out << ",\"space\":{\"total_bytes\":" << sf.total_blocks * sf.block_size
        << ",\"free_bytes\":" << sf.free_blocks * sf.block_size
        << ",\"avail_bytes\":" << sf.avail_blocks * sf.block_size << ",\"files_free\":" << sf.files_free << "}";
  const meta::MetaSpace sp = fs.meta.space();
  out << ",\"metadata\":{\"capacity_bytes\":" << sp.capacity << ",\"used_bytes\":" << sp.used
      << ",\"inodes\":" << sp.inodes << ",\"write_failed\":" << (fs.meta.write_failed() ? "true" : "false") << "}";
  const meta::DiscardStats ds = fs.meta.discard_stats();
  out << ",\"discard\":{\"online\":" << (ds.online ? "true" : "false") << ",\"online_bytes\":" << ds.online_bytes
      << ",\"fstrim_runs\":" << ds.fstrim_runs << ",\"fstrim_bytes\":" << ds.fstrim_bytes
      << ",\"pending_bytes\":" << ds.pending_bytes << ",\"errors\":" << ds.errors << "}";
  const TailBlocks::Counts tc = fs.tails.counts();
  out << ",\"tail_blocks\":{\"live\":" << tc.live << ",\"absorbed\":" << tc.absorbed
      << ",\"written_back\":" << tc.written_back << "}";
  const ReadBlocks::Counts rc = fs.read_blocks.counts();
  out << ",\"read_blocks\":{\"hits\":" << rc.hits << ",\"kept\":" << rc.kept << "}";
  const WriteBehind::Counts wb = fs.write_behind.counts();
  out << ",\"write_behind\":{\"answered\":" << wb.answered << ",\"pending_bytes\":" << wb.pending_bytes
      << ",\"errors\":" << wb.errors << ",\"waits\":" << wb.waits << "}";
  if (fs.transport != nullptr) {
    TransportStatus t = fs.transport->status();
    out << ",\"transport\":{\"name\":" << quoted(t.name) << ",\"ring_requests\":[";
    for (size_t i = 0; i < t.ring_requests.size(); ++i) out << (i ? "," : "") << t.ring_requests[i];
    out << "],\"dev_fuse_requests\":" << t.dev_fuse_requests;
    if (!t.ring_requests.empty()) {
      out << ",\"ring_entries\":" << t.ring_entries << ",\"ring_request_bytes\":" << t.ring_request_bytes
          << ",\"ring_data_requests\":" << t.ring_data_requests
          << ",\"ring_yielded_replies\":" << t.ring_yielded_replies << ",\"ring_yield_stalls\":" << t.ring_yield_stalls
          << ",\"ring_inline_fsyncs\":" << t.ring_inline_fsyncs;
    }
    // The look of whichever serves the requests: the rings' on io-uring.
    const ReadSpin& spin = t.ring_requests.empty() ? fs.read_spin : fs.ring_spin;
    out << ",\"read_spin\":{\"window_ns\":" << spin.window_ns() << ",\"requests_found\":" << spin.requests_found()
        << ",\"sleeps\":" << spin.sleeps() << "}";
    // Classic: the one reader following lone programs (lone_caller_follow.h).
    if (t.ring_requests.empty()) {
      out << ",\"lone_follow\":{\"runs\":" << fs.lone_caller.follow_runs()
          << ",\"stalls\":" << fs.lone_caller.follow_stalls() << "}";
    }
    out << "}";
  }
  out << "}";
  return out.str();
}

}  // namespace peregrine::fs
