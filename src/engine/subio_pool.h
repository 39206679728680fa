// Taking SubIos from a submitter slot's pool, for both schedulers (the
// per-drive path in submitter.cpp, PerVolumeScheduler). Internal to the
// engine.
//
// Thread rules: the slot's owner thread only (the thread that holds its
// Submitter); drives hand SubIos back through the slot's return queues.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "peregrine/engine/request.h"
#include "sub_io.h"

namespace peregrine {

// Makes sure the slot's pool has `want` free SubIos (capped at the pool
// size), refilling it from what the drives have handed back. While short,
// `make_progress` unplugs the batch so that the drives can finish some, and
// the thread waits for returns. Reserving a whole request's SubIos up front
// keeps the request in one batch, so it merges whole on each drive.
template <typename MakeProgress>
void reserve_subios(SubmitterSlot& slot, size_t want, MakeProgress&& make_progress,
                    const std::function<void()>& before_block) {
  want = std::min(want, slot.pool.size());
  for (;;) {
    if (slot.free.size() >= want) return;
    for (uint32_t d = 0, n = slot.drives_returning(); d < n; ++d) {
      slot.returns_of(d).consume_all([&](uint32_t id) { slot.free.push_back(id); });
    }
    if (slot.free.size() >= want) return;
    make_progress();
    // A drive bumps the epoch after each batch of returns. Either it does so
    // after our load (then wait() returns at once), or its returns are
    // visible to the check below.
    uint32_t epoch = slot.return_epoch.load();
    slot.waiting_for_returns.store(true);
    bool any = false;
    for (uint32_t d = 0, n = slot.drives_returning(); d < n; ++d) any = any || slot.returns_of(d).read_available() != 0;
    if (!any) {
      if (before_block) before_block();
      slot.return_epoch.wait(epoch);
    }
    slot.waiting_for_returns.store(false);
  }
}

template <typename MakeProgress>
SubIo* take_subio(SubmitterSlot& slot, MakeProgress&& make_progress, const std::function<void()>& before_block) {
  reserve_subios(slot, 1, make_progress, before_block);
  SubIo* s = &slot.pool[slot.free.back()];
  slot.free.pop_back();
  return s;
}

inline void init_subio(SubIo* s, Request& r, uint64_t member_offset, std::byte* buf, uint32_t len) {
  s->parent = &r;
  s->op = r.op;
  s->via_page_cache = r.via_page_cache;
  s->retried = false;
  s->buffer = buf;
  s->member_offset = member_offset;
  s->length = len;
  s->arrival_ns = r.arrival_ns;
}

}  // namespace peregrine
