// DriveStats: a consistent snapshot of one drive's counters, taken while
// the engine runs (Engine::stats). Plain values; copy freely.
// Thread rules: none; a snapshot belongs to the thread that took it.
#pragma once

#include <array>
#include <cstdint>

namespace peregrine {

// Latency histogram with 4 buckets per power of two (at most 19% error),
// covering 0 ns to 2^64 ns, plus the exact sum of what it recorded (a
// Prometheus histogram needs it, and bucket bounds cannot give it).
class LatencyHistogram {
 public:
  static constexpr int kBuckets = 256;

  void record(uint64_t ns) {
    ++counts_[bucket_of(ns)];
    ++total_;
    sum_ns_ += ns;
  }
  void add(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    sum_ns_ += o.sum_ns_;
  }
  uint64_t count() const { return total_; }
  // Sum of the recorded latencies; add_bucket() does not change it.
  uint64_t sum_ns() const { return sum_ns_; }
  uint64_t bucket_count(int bucket) const { return counts_[bucket]; }
  void add_bucket(int bucket, uint64_t n) {
    counts_[bucket] += n;
    total_ += n;
  }
  // Upper bound of the bucket holding the p-th percentile (0 < p <= 100).
  uint64_t percentile(double p) const;

  static int bucket_of(uint64_t ns);
  static uint64_t bucket_upper(int bucket);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t sum_ns_ = 0;
};

struct DriveStats {
  uint64_t subios = 0;     // sub-IOs received
  uint64_t ios = 0;        // IOs dispatched to the device (after merging)
  uint64_t read_ios = 0;   // of those, reads
  uint64_t write_ios = 0;  // of those, writes (the rest are flushes)
  uint64_t merged = 0;     // sub-IOs that joined a neighbour's IO
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t flushes = 0;
  uint64_t tag_waits = 0;           // IOs that found no free tag
  uint64_t pressure_waits = 0;      // submitters blocked at the high pressure point
  uint64_t inline_batches = 0;      // batches dispatched by a submitting thread
  uint64_t polled = 0;              // IOs a submitting thread reaped by polling (inline_poll_ns)
  uint64_t short_ios = 0;           // transfers resubmitted after a short result
  uint64_t errors = 0;              // IOs that failed
  uint64_t retried_unmerged = 0;    // failed merged IOs re-sent piece by piece
  uint64_t holds = 0;               // times the drive held writes for neighbours (hold_writes_ns)
  uint64_t backlog = 0;             // gauge: IOs waiting for a tag
  uint64_t queued = 0;              // gauge: sub-IOs not yet dispatched
  uint64_t in_flight = 0;           // gauge: IOs on the device
  uint32_t queue_depth = 0;         // tags
  LatencyHistogram stack_latency;   // sub-IO arrival -> dispatch
  LatencyHistogram device_latency;  // IO dispatch -> completion
};

}  // namespace peregrine
