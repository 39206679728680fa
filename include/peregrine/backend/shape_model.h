// ShapeModel: when a modelled SSD finishes an IO. Pure arithmetic on
// nanosecond timestamps: no IO, no clock, no locks. Shared by ShapedDevice
// (peregrine's shaped members) and the benchmark's shaping FUSE layer
// (tools/bench/fuse/shape_fs.cpp), so that peregrine and the systems it is
// compared with see exactly the same device.
//
// Model: an IO starts no earlier than the IOPS cap allows, transfers after
// the IOs before it at `bytes_per_sec`, and completes at
// max(start + latency, end of its transfer). Queue depth (at most
// `queue_depth` IOs inside the device, the rest wait in FIFO order) is the
// caller's to enforce: call admit() only for an IO that has a slot.
//
// Thread rules: none of its own; the owner serialises every call.
#pragma once

#include <cstdint>

namespace peregrine {

struct ShapeParams {
  uint64_t latency_ns = 0;     // per-IO service latency
  uint32_t queue_depth = 0;    // IOs served at once; 0 = unlimited
  uint64_t iops = 0;           // IO starts per second; 0 = unlimited
  uint64_t bytes_per_sec = 0;  // transfer rate; 0 = unlimited
};

class ShapeModel {
 public:
  explicit ShapeModel(ShapeParams params) : params_(params) {}

  // An IO of `bytes` enters the device at `now_ns`; returns when it completes.
  uint64_t admit(uint64_t now_ns, uint64_t bytes);

  const ShapeParams& params() const { return params_; }

 private:
  ShapeParams params_;
  uint64_t next_start_ns_ = 0;     // IOPS pacing
  uint64_t transfer_free_ns_ = 0;  // bandwidth pacing
};

}  // namespace peregrine
