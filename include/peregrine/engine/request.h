// Request: one read, write or flush of the volume, as handed to the engine.
//
// The caller owns the Request and its buffer and keeps both alive until
// on_complete runs. The engine splits the request at stripe-unit
// boundaries into sub-IOs, one per (member, stripe unit) piece, and calls
// on_complete exactly once, when the last piece has finished, with 0 or the
// first -errno any piece hit.
//
// Thread rules: on_complete runs on a drive thread; it must be short and
// must not block (reply, signal, enqueue — nothing more). A Request may be
// reused once on_complete has started.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "peregrine/backend/device_queue.h"  // IoOp

namespace peregrine {

struct Request {
  IoOp op = IoOp::read;
  uint64_t offset = 0;  // volume byte offset; ignored for flush
  uint64_t length = 0;  // bytes; ignored for flush
  std::byte* buffer = nullptr;
  void (*on_complete)(Request& request, int result) = nullptr;
  void* context = nullptr;  // the caller's, untouched by the engine
  // Someone waits for the completion: a submitting thread that served the
  // request inline may poll for it (engine.inline_poll_us). false: a write
  // already answered, whose thread has other requests to serve.
  bool awaited = true;
  // A write the drive may hold for its neighbours (EngineConfig::
  // hold_writes_ns): one nobody waits for (awaited false) from a caller
  // that gains from it.
  bool may_hold = false;
  // A read that may pass through the member's own page cache, whose
  // read-ahead then brings in the neighbouring bytes: a small file's read
  // for the kernel's page cache, whose next small files lie beside it
  // (DriveSpec::page_cache_fd). Ignored for writes and flushes.
  bool via_page_cache = false;

  // Engine-private state: the caller does not read or write these.
  std::atomic<uint32_t> pending{0};
  std::atomic<int> error{0};
  uint64_t arrival_ns = 0;
};

}  // namespace peregrine
