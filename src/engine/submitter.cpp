#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <functional>

#include "drive.h"
#include "peregrine/engine/engine.h"
#include "peregrine/util/clock.h"

namespace peregrine {
namespace {

constexpr uint64_t kAlign = 4096;

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
    for (auto& q : slot.returns) {
      q->consume_all([&](uint32_t id) { slot.free.push_back(id); });
    }
    if (slot.free.size() >= want) return;
    make_progress();
    // A drive bumps the epoch after each batch of returns. Either it does so
    // after our load (then wait() returns at once), or its returns are
    // visible to the check below.
    uint32_t epoch = slot.return_epoch.load();
    slot.waiting_for_returns.store(true);
    bool any = false;
    for (auto& q : slot.returns) any = any || q->read_available() != 0;
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

void init_subio(SubIo* s, Request& r, uint64_t member_offset, std::byte* buf, uint32_t len) {
  s->parent = &r;
  s->op = r.op;
  s->buffer = buf;
  s->member_offset = member_offset;
  s->length = len;
  s->arrival_ns = r.arrival_ns;
}

}  // namespace

Submitter::Submitter(Engine& engine, SubmitterSlot& slot) : engine_(engine), slot_(slot) {}

Submitter::~Submitter() {
  unplug();
  slot_.in_use.store(false);
}

int Submitter::add(Request& r) {
  const StripeMap& map = engine_.map_;
  uint32_t drives = engine_.drive_count();
  bool per_volume = engine_.config_.scheduler == Scheduler::per_volume;
  if (r.op != IoOp::flush) {
    if (r.offset % kAlign != 0 || r.length % kAlign != 0 ||
        reinterpret_cast<uintptr_t>(r.buffer) % kAlign != 0 || r.offset > map.volume_size() ||
        r.length > map.volume_size() - r.offset) {
      return -EINVAL;
    }
    if (r.length == 0) {
      r.on_complete(r, 0);
      return 0;
    }
  }
  r.error.store(0, std::memory_order_relaxed);
  r.arrival_ns = monotonic_ns();
  r.pending.store(r.op == IoOp::flush ? drives : static_cast<uint32_t>(map.piece_count(r.offset, r.length)),
                  std::memory_order_relaxed);
  if (per_volume) {
    add_per_volume(r);
    return 0;
  }
  const std::function<void()>& before_block = engine_.config_.before_submitter_blocks;
  auto progress = [this] { unplug(); };
  reserve_subios(slot_, r.pending.load(std::memory_order_relaxed), progress, before_block);
  auto stage = [&](uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len) {
    SubIo* s = take_subio(slot_, progress, before_block);
    init_subio(s, r, member_offset, buf, len);
    slot_.plug[member].push_back(s);
    ++slot_.batch;
  };
  if (r.op == IoOp::flush) {
    for (uint32_t d = 0; d < drives; ++d) stage(d, 0, nullptr, 0);
  } else {
    map.split(r.offset, r.length, [&](const StripePiece& p) {
      stage(p.member, p.member_offset, r.buffer + (p.volume_offset - r.offset), static_cast<uint32_t>(p.length));
    });
  }
  // The batch ends at a request boundary, so that a large request reaches
  // each drive whole and merges into one IO there. (A request larger than
  // the SubIo pool is unplugged piecewise by take_subio.)
  if (slot_.batch >= engine_.config_.high_watermark) unplug();
  return 0;
}

void Submitter::unplug(Completions where) {
  if (engine_.config_.scheduler == Scheduler::per_volume) {
    unplug_per_volume();
    return;
  }
  if (slot_.batch == 0) return;
  slot_.batch = 0;
  const EngineConfig& c = engine_.config_;
  const bool complete_here = where == Completions::here;
  uint64_t volume_outstanding = UINT64_MAX;
  bool volume_was_idle = false;  // nothing outstanding before this batch
  for (uint32_t d = 0; d < engine_.drive_count(); ++d) {
    std::vector<SubIo*>& list = slot_.plug[d];
    if (list.empty()) continue;
    Drive& drive = *engine_.drives_[d];
    bool served_inline = false;
    if (c.inline_dispatch && list.size() <= c.low_watermark) {
      if (volume_outstanding == UINT64_MAX) {
        volume_outstanding = 0;
        for (auto& other : engine_.drives_) volume_outstanding += other->outstanding();
        volume_was_idle = volume_outstanding == 0;
      }
      if (volume_outstanding + list.size() <= c.low_watermark) {
        served_inline = drive.try_dispatch_inline(list.data(), list.size(), complete_here);
        if (served_inline) volume_outstanding += list.size();
        if (served_inline && complete_here) slot_.served_inline.push_back(d);
      }
    }
    if (!served_inline) drive.push(slot_.index, list.data(), list.size());
    list.clear();
  }
  // Only now, with every plug list handed on and the batch empty: a
  // callback may stage and unplug IO of its own on this thread.
  // Indexed: a callback's own unplug may add to the list (and clear it).
  for (size_t i = 0; i < slot_.served_inline.size(); ++i) engine_.drives_[slot_.served_inline[i]]->complete_inline();
  // Only for a lone request: with other IO in flight, its replies are
  // near and the CPU this thread would spin on serves them.
  if (poll_stop_ != nullptr && c.inline_poll_ns != 0 && volume_was_idle && !slot_.served_inline.empty()) {
    const uint64_t deadline = monotonic_ns() + c.inline_poll_ns;
    for (size_t i = 0; i < slot_.served_inline.size(); ++i) {
      if (!engine_.drives_[slot_.served_inline[i]]->poll_inline(deadline, poll_stop_, poll_stop_ctx_)) break;
    }
  }
  slot_.served_inline.clear();
}

// Both schedulers count what they stage in batch and zero it on unplug.
bool Submitter::has_staged() const { return slot_.batch != 0; }

// ---- per-volume baseline: tags at plug time, round-robin dispatch ----

void Submitter::add_per_volume(Request& r) {
  const EngineConfig& c = engine_.config_;
  auto progress = [this] { unplug_per_volume(); };
  auto stage = [&](uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len) {
    Drive& drive = *engine_.drives_[member];
    std::vector<uint32_t>& tags = slot_.plug_tags[member];
    SubIo* s = take_subio(slot_, progress, c.before_submitter_blocks);
    init_subio(s, r, member_offset, buf, len);
    s->next = nullptr;
    // Like the kernel's plug merge: try to extend the last IO of this drive.
    if (!tags.empty() && r.op != IoOp::flush) {
      SubIo* head = drive.tag_chain(tags.back());
      if (head->op == s->op && head->member_offset + head->chain_bytes == member_offset &&
          head->chain_bytes + len <= c.max_io_bytes && head->chain_count + 1 <= c.max_iovecs) {
        head->chain_tail->next = s;
        head->chain_tail = s;
        head->chain_bytes += len;
        ++head->chain_count;
        if (++slot_.batch >= c.high_watermark) unplug_per_volume();
        return;
      }
    }
    uint32_t tag;
    while (!drive.try_acquire_tag(&tag)) {
      // Out of tags on this drive: the whole thread stops here, as the
      // per-volume path does. Dispatch what we hold first (as the kernel
      // flushes the plug before sleeping), or we would wait on ourselves.
      unplug_per_volume();
      if (c.before_submitter_blocks) c.before_submitter_blocks();
      drive.wait_for_tag();
    }
    s->chain_tail = s;
    s->chain_bytes = len;
    s->chain_count = 1;
    drive.bind_tag(tag, s);
    tags.push_back(tag);
    if (++slot_.batch >= c.high_watermark) unplug_per_volume();
  };
  if (r.op == IoOp::flush) {
    for (uint32_t d = 0; d < engine_.drive_count(); ++d) stage(d, 0, nullptr, 0);
    return;
  }
  engine_.map_.split(r.offset, r.length, [&](const StripePiece& p) {
    stage(p.member, p.member_offset, r.buffer + (p.volume_offset - r.offset), static_cast<uint32_t>(p.length));
  });
}

void Submitter::unplug_per_volume() {
  slot_.batch = 0;
  uint32_t n = engine_.drive_count();
  uint32_t first = slot_.round_robin++ % n;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t d = (first + i) % n;
    std::vector<uint32_t>& tags = slot_.plug_tags[d];
    if (tags.empty()) continue;
    engine_.drives_[d]->dispatch_tags(tags.data(), tags.size());
    tags.clear();
  }
}

}  // namespace peregrine
