#include "peregrine/backend/shape_model.h"

#include <algorithm>

namespace peregrine {

uint64_t ShapeModel::admit(uint64_t now_ns, uint64_t bytes) {
  uint64_t start = std::max(now_ns, next_start_ns_);
  if (params_.iops != 0) next_start_ns_ = start + 1000000000ull / params_.iops;
  uint64_t done = start + params_.latency_ns;
  if (params_.bytes_per_sec != 0) {
    uint64_t transfer = bytes * 1000000000ull / params_.bytes_per_sec;
    transfer_free_ns_ = std::max(start, transfer_free_ns_) + transfer;
    done = std::max(done, transfer_free_ns_);
  }
  return done;
}

}  // namespace peregrine
