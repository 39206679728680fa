// ClosedLoop: one submitting thread that keeps `depth` requests
// outstanding on an Engine for a fixed time, the way fio's io_uring engine
// keeps an iodepth. Completions (on drive threads) go into a lock-free
// queue; the submitting thread refills in batches and unplugs once per
// batch.
// Thread rules: single-threaded use; run() is called on the submitting thread.
#pragma once

#include <cstdint>
#include <functional>

#include "peregrine/engine/engine.h"

namespace peregrine::bench {

struct LoopResult {
  uint64_t requests = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;  // user + system of the whole process
  uint64_t errors = 0;
};

// Chooses the volume offset of the next request.
using OffsetFn = std::function<uint64_t()>;

LoopResult run_closed_loop(Engine& engine, IoOp op, uint64_t request_bytes, uint32_t depth, double seconds,
                           const OffsetFn& next_offset);

}  // namespace peregrine::bench
