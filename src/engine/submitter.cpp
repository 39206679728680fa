#include <cerrno>
#include <cstdint>
#include <functional>
#include <vector>

#include "drive.h"
#include "layout_fence.h"
#include "per_volume_scheduler.h"
#include "peregrine/engine/engine.h"
#include "peregrine/util/clock.h"
#include "subio_pool.h"

namespace peregrine {
namespace {

constexpr uint64_t kAlign = 4096;

uint64_t share_bytes(const std::vector<SubIo*>& list) {
  uint64_t bytes = 0;
  for (const SubIo* s : list) bytes += s->length;
  return bytes;
}

}  // namespace

Submitter::Submitter(Engine& engine, SubmitterSlot& slot) : engine_(engine), slot_(slot) {
  if (engine.config_.scheduler == Scheduler::per_volume)
    per_volume_ = std::make_unique<PerVolumeScheduler>(
        engine.config_, engine.map_, std::span(engine.drives_.data(), engine.drive_count()), slot);
}

Submitter::~Submitter() {
  unplug();
  slot_.in_use.store(false);
}

int Submitter::add(Request& r) {
  const StripeMap& map = engine_.map_;
  uint32_t drives = engine_.drive_count();
  if (r.op != IoOp::flush) {
    if (r.offset % kAlign != 0 || r.length % kAlign != 0 || reinterpret_cast<uintptr_t>(r.buffer) % kAlign != 0 ||
        r.offset > map.volume_size() || r.length > map.volume_size() - r.offset) {
      return -EINVAL;
    }
    if (r.length == 0) {
      r.on_complete(r, 0);
      return 0;
    }
  }
  if (r.op != IoOp::flush) {
    // Said before the fence is looked at (sequentially consistent, once a
    // batch): an online restripe that starts now waits for what this
    // thread stages without the fence (Engine::begin_restripe).
    if (!slot_.staged.load(std::memory_order_relaxed)) slot_.staged.store(true);
    if (engine_.fence_->active() &&
        !engine_.fence_->admit(r, map.unit_of(r.offset), map.unit_of(r.offset + r.length - 1) + 1))
      return 0;  // held back until its window is moved, then added again
  }
  r.error.store(0, std::memory_order_relaxed);
  if (r.op != IoOp::flush && direct_pieces_ && !per_volume_ && stage_direct(r)) return 0;
  r.arrival_ns = monotonic_ns();
  awaited_staged_ = awaited_staged_ || r.awaited;
  if (r.op == IoOp::flush) {
    // Only the drives that completed a write since their last flush: the
    // others hold nothing a flush would make durable.
    // Chosen once: a write completing meanwhile must not change the count.
    flush_targets_.clear();
    for (uint32_t d = 0; d < drives; ++d) {
      if (engine_.drives_[d]->needs_flush()) flush_targets_.push_back(d);
    }
    if (flush_targets_.empty()) {
      r.on_complete(r, 0);
      return 0;
    }
    r.pending.store(static_cast<uint32_t>(flush_targets_.size()), std::memory_order_relaxed);
  } else {
    r.pending.store(static_cast<uint32_t>(map.piece_count(r.offset, r.length)), std::memory_order_relaxed);
  }
  if (per_volume_) {
    per_volume_->add(r, flush_targets_);
    return 0;
  }
  reserve_subios(slot_, r.pending.load(std::memory_order_relaxed), [this] { make_progress(); },
                 engine_.config_.before_submitter_blocks);
  if (r.op == IoOp::flush) {
    for (uint32_t d : flush_targets_) stage_on_drive(r, d, 0, nullptr, 0);
  } else {
    map.split(r.offset, r.length, [&](const StripePiece& p) {
      stage_on_drive(r, p.member, p.member_offset, r.buffer + (p.volume_offset - r.offset),
                     static_cast<uint32_t>(p.length));
    });
  }
  // The batch ends at a request boundary, so that a large request reaches
  // each drive whole and merges into one IO there. (A request larger than
  // the SubIo pool is unplugged piecewise by take_subio.)
  if (slot_.batch >= engine_.high_watermark()) unplug();
  return 0;
}

// Before waiting for SubIos to come back: hand the batch on, and have the
// drives send what they hold (some of it may be this slot's).
void Submitter::make_progress() {
  unplug();
  engine_.dispatch_held();
}

void Submitter::stage_on_drive(Request& r, uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len) {
  SubIo* s = take_subio(slot_, [this] { make_progress(); }, engine_.config_.before_submitter_blocks);
  init_subio(s, r, member_offset, buf, len);
  slot_.plug[member].push_back(s);
  ++slot_.batch;
}

bool Submitter::stage_direct(Request& r) {
  const EngineConfig& c = engine_.config_;
  const StripeMap& map = engine_.map_;
  // Not a large piece: the drive threads copy those in parallel while this
  // thread goes on (EngineConfig::inline_max_bytes).
  if (!c.inline_dispatch || r.length > c.inline_max_bytes || map.piece_count(r.offset, r.length) != 1) return false;
  const StripePiece p = map.piece_at(r.offset, r.length);
  if (!engine_.drives_[p.member]->copies_inline()) return false;
  slot_.direct.push_back(DirectPiece{&r, p.member, p.member_offset});
  if (++slot_.batch >= engine_.high_watermark()) unplug();
  return true;
}

void Submitter::stage_on_its_drive(const DirectPiece& d) {
  Request& r = *d.request;
  r.arrival_ns = monotonic_ns();
  r.pending.store(1, std::memory_order_relaxed);
  awaited_staged_ = awaited_staged_ || r.awaited;
  stage_on_drive(r, d.drive, d.member_offset, r.buffer, static_cast<uint32_t>(r.length));
}

void Submitter::stage_direct_on_drives() {
  std::vector<DirectPiece> pieces;
  pieces.swap(slot_.direct);
  for (const DirectPiece& d : pieces) stage_on_its_drive(d);
  pieces.clear();
  if (slot_.direct.empty()) slot_.direct.swap(pieces);  // keeps the room
}

void Submitter::move_direct_pieces() {
  // A callback may add and unplug on this thread: it moves what it adds
  // itself, in a list of its own.
  std::vector<DirectPiece> pieces;
  pieces.swap(slot_.direct);
  bool staged = false;
  for (const DirectPiece& d : pieces) {
    Request& r = *d.request;
    const int rc =
        engine_.drives_[d.drive]->transfer_direct(r.op, d.member_offset, r.buffer, r.length, slot_.direct_counts[d.drive]);
    if (rc == -EOPNOTSUPP) {  // the device was swapped for one that does not (none does today)
      stage_on_its_drive(d);
      staged = true;
      continue;
    }
    r.on_complete(r, rc);
  }
  pieces.clear();
  if (slot_.direct.empty()) slot_.direct.swap(pieces);
  if (staged) unplug(Completions::here);
}

void Submitter::unplug(Completions where) {
  unplug_batch(where);
  // Everything staged before is on the drives now (or done): an online
  // restripe that is starting may count on it (Engine::begin_restripe).
  // Not while a callback left IO of its own staged: that waits for the
  // next unplug, which says so then.
  if (slot_.staged.load(std::memory_order_relaxed) && slot_.batch == 0 && slot_.direct.empty()) {
    slot_.unplugs.store(slot_.unplugs.load(std::memory_order_relaxed) + 1);
    slot_.staged.store(false);
  }
}

void Submitter::unplug_batch(Completions where) {
  if (per_volume_) {
    per_volume_->unplug();
    return;
  }
  if (slot_.batch == 0) return;
  // Only a thread that may run callbacks moves lone pieces itself; for any
  // other they go to their drives as every piece does.
  const bool complete_here = where != Completions::on_drive_thread;
  if (!complete_here && !slot_.direct.empty()) stage_direct_on_drives();
  slot_.batch = 0;
  const EngineConfig& c = engine_.config_;
  const uint32_t low_watermark = engine_.low_watermark();
  const bool latency_inline = where != Completions::unawaited_here;
  uint64_t volume_outstanding = UINT64_MAX;
  bool volume_was_idle = false;  // nothing outstanding before this batch
  bool large_share_inline = false;
  // The shares this thread may serve itself are dispatched after every
  // other share has gone to its drive thread: a memory-backed member
  // copies inline, and the drive threads should copy theirs meanwhile.
  std::vector<uint32_t>& candidates = slot_.inline_candidates;
  for (uint32_t d = 0; d < engine_.drive_count(); ++d) {
    std::vector<SubIo*>& list = slot_.plug[d];
    if (list.empty()) continue;
    bool candidate = false;
    if (c.inline_dispatch && list.size() <= low_watermark &&
        (latency_inline || engine_.drives_[d]->copies_inline())) {
      if (volume_outstanding == UINT64_MAX) {
        volume_outstanding = 0;
        for (uint32_t o = 0; o < engine_.drive_count(); ++o) volume_outstanding += engine_.drives_[o]->outstanding();
        volume_was_idle = volume_outstanding == 0;
      }
      candidate = volume_outstanding + list.size() <= low_watermark;
      // A large share only if it is the batch's first and no other
      // request waits for this thread: the drive threads move large
      // shares in parallel, with each other and with this thread.
      if (candidate && share_bytes(list) > c.inline_max_bytes) {
        candidate = !large_share_inline && (poll_stop_ == nullptr || !poll_stop_(poll_stop_ctx_));
        large_share_inline = large_share_inline || candidate;
      }
      if (candidate) volume_outstanding += list.size();
    }
    if (candidate) {
      candidates.push_back(d);
    } else {
      engine_.drives_[d]->push(slot_.index, list.data(), list.size());
      list.clear();
    }
  }
  for (uint32_t d : candidates) {
    std::vector<SubIo*>& list = slot_.plug[d];
    Drive& drive = *engine_.drives_[d];
    const bool served_inline = drive.try_dispatch_inline(list.data(), list.size(), complete_here);
    if (served_inline && complete_here) slot_.served_inline.push_back(d);
    if (!served_inline) drive.push(slot_.index, list.data(), list.size());
    list.clear();
  }
  candidates.clear();
  // Only now, with every plug list handed on and the batch empty: a
  // callback may stage and unplug IO of its own on this thread.
  if (!slot_.direct.empty()) move_direct_pieces();
  // Indexed: a callback's own unplug may add to the list (and clear it).
  for (size_t i = 0; i < slot_.served_inline.size(); ++i) engine_.drives_[slot_.served_inline[i]]->complete_inline();
  // Only for a lone request: with other IO in flight, its replies are
  // near and the CPU this thread would spin on serves them.
  // And only if someone waits for it (Request::awaited).
  const bool awaited = awaited_staged_;
  awaited_staged_ = false;
  if (poll_stop_ != nullptr && c.inline_poll_ns != 0 && volume_was_idle && awaited &&
      !slot_.served_inline.empty()) {
    const uint64_t deadline = monotonic_ns() + c.inline_poll_ns;
    for (size_t i = 0; i < slot_.served_inline.size(); ++i) {
      if (!engine_.drives_[slot_.served_inline[i]]->poll_inline(deadline, poll_stop_, poll_stop_ctx_)) break;
    }
  }
  slot_.served_inline.clear();
}

// Both schedulers count what they stage in batch and zero it on unplug.
bool Submitter::has_staged() const { return slot_.batch != 0; }

}  // namespace peregrine
