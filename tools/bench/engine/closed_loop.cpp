#include "closed_loop.h"

#include <sys/resource.h>

#include <atomic>
#include <boost/lockfree/queue.hpp>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/clock.h"

namespace peregrine::bench {
namespace {

struct Shared {
  boost::lockfree::queue<uint32_t, boost::lockfree::fixed_sized<true>> done{4096};
  std::atomic<uint32_t> done_epoch{0};
  std::atomic<bool> waiting{false};
  std::atomic<uint64_t> errors{0};
};

struct Slot {
  Request req;
  Shared* shared = nullptr;
  uint32_t index = 0;
};

void on_complete(Request& r, int result) {
  auto* slot = static_cast<Slot*>(r.context);
  Shared& sh = *slot->shared;
  if (result != 0) sh.errors.fetch_add(1, std::memory_order_relaxed);
  while (!sh.done.push(slot->index)) {
  }
  sh.done_epoch.fetch_add(1);
  if (sh.waiting.load()) sh.done_epoch.notify_one();
}

double cpu_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

LoopResult run_closed_loop(Engine& engine, IoOp op, uint64_t request_bytes, uint32_t depth, double seconds,
                           const OffsetFn& next_offset) {
  auto sub = engine.open_submitter();
  if (!sub) {
    std::fprintf(stderr, "bench: %s\n", sub.status().message().c_str());
    std::exit(1);
  }
  Shared shared;
  std::vector<Slot> slots(depth);
  std::vector<AlignedBuffer> buffers;
  buffers.reserve(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    buffers.emplace_back(request_bytes);
    slots[i].shared = &shared;
    slots[i].index = i;
    slots[i].req.op = op;
    slots[i].req.length = request_bytes;
    slots[i].req.buffer = buffers[i].data();
    slots[i].req.on_complete = &on_complete;
    slots[i].req.context = &slots[i];
  }
  LoopResult res;
  double cpu0 = cpu_now();
  uint64_t t0 = monotonic_ns();
  uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  for (uint32_t i = 0; i < depth; ++i) {
    slots[i].req.offset = next_offset();
    (*sub)->add(slots[i].req);
  }
  (*sub)->unplug();
  uint32_t outstanding = depth;
  bool stopping = false;
  while (outstanding > 0) {
    uint32_t epoch = shared.done_epoch.load();
    uint32_t idx;
    uint32_t got = 0;
    while (shared.done.pop(idx)) {
      ++got;
      --outstanding;
      if (!stopping && monotonic_ns() >= end) {
        stopping = true;
        res.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
        res.cpu_seconds = cpu_now() - cpu0;
      }
      if (!stopping) {
        ++res.requests;
        slots[idx].req.offset = next_offset();
        (*sub)->add(slots[idx].req);
        ++outstanding;
      }
    }
    if (got > 0) {
      (*sub)->unplug();
      continue;
    }
    shared.waiting.store(true);
    if (shared.done.empty()) shared.done_epoch.wait(epoch);
    shared.waiting.store(false);
  }
  // Only requests completed before the deadline count; the drain after it
  // is not measured.
  res.bytes = res.requests * request_bytes;
  res.errors = shared.errors.load();
  return res;
}

}  // namespace peregrine::bench
