#include <bit>

#include "peregrine/engine/drive_stats.h"

namespace peregrine {

// Values below 16 ns get a bucket each; above, each power of two is cut
// into 4 equal sub-buckets.
int LatencyHistogram::bucket_of(uint64_t ns) {
  if (ns < 16) return static_cast<int>(ns);
  int e = 63 - std::countl_zero(ns);  // >= 4
  int sub = static_cast<int>((ns >> (e - 2)) & 3);
  return 16 + (e - 4) * 4 + sub;
}

uint64_t LatencyHistogram::bucket_upper(int bucket) {
  if (bucket < 16) return static_cast<uint64_t>(bucket);
  int e = (bucket - 16) / 4 + 4;
  uint64_t sub = static_cast<uint64_t>((bucket - 16) % 4);
  uint64_t base = uint64_t{1} << e;
  uint64_t step = base >> 2;
  return base + (sub + 1) * step - 1;
}

uint64_t LatencyHistogram::percentile(double p) const {
  if (total_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(p / 100.0 * static_cast<double>(total_) + 0.5);
  if (rank < 1) rank = 1;
  if (rank > total_) rank = total_;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return bucket_upper(i);
  }
  return bucket_upper(kBuckets - 1);
}

}  // namespace peregrine
