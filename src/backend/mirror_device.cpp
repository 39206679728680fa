// MirrorDevice and MirrorFence (mirror_device.h).
#include "peregrine/backend/mirror_device.h"

#include <algorithm>
#include <limits>

#include "peregrine/backend/completion_waker.h"

namespace peregrine {

// ---- MirrorFence ----

bool MirrorFence::fenced(uint64_t begin, uint64_t end) const {
  return has_fence_ && begin < fence_.end && fence_.begin < end;
}

void MirrorFence::bump_and_wake() {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  if (waker_ != nullptr) waker_->wake();
}

void MirrorFence::fence(uint64_t begin, uint64_t end) {
  MutexLock lock(mu_);
  has_fence_ = true;
  dirty_ = false;
  fence_ = Range{begin, end};
  lock.wait(cv_, [&] {
    mu_.assert_held();
    return std::none_of(in_flight_.begin(), in_flight_.end(),
                        [&](const Range& r) { return r.begin < end && begin < r.end; });
  });
}

bool MirrorFence::release() {
  MutexLock lock(mu_);
  has_fence_ = false;
  bump_and_wake();
  return dirty_;
}

void MirrorFence::flush_both() { flush_both_.store(true, std::memory_order_seq_cst); }

void MirrorFence::set_mode(MirrorMode mode) {
  MutexLock lock(mu_);
  mode_.store(mode, std::memory_order_seq_cst);
  has_fence_ = false;
  bump_and_wake();
}

void MirrorFence::wait_retired() {
  MutexLock lock(mu_);
  lock.wait(cv_, [&] {
    mu_.assert_held();
    return retired_;
  });
}

bool MirrorFence::try_admit_write(uint64_t begin, uint64_t end) {
  MutexLock lock(mu_);
  if (fenced(begin, end)) return false;
  in_flight_.push_back(Range{begin, end});
  return true;
}

void MirrorFence::admit_write(uint64_t begin, uint64_t end) {
  MutexLock lock(mu_);
  if (fenced(begin, end)) dirty_ = true;
  in_flight_.push_back(Range{begin, end});
}

void MirrorFence::done_write(uint64_t begin, uint64_t end) {
  MutexLock lock(mu_);
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [&](const Range& r) { return r.begin == begin && r.end == end; });
  if (it != in_flight_.end()) {
    *it = in_flight_.back();
    in_flight_.pop_back();
  }
  if (has_fence_) cv_.notify_all();
}

void MirrorFence::note_secondary_error(int error) {
  int none = 0;
  secondary_error_.compare_exchange_strong(none, error < 0 ? error : -EIO, std::memory_order_acq_rel);
}

void MirrorFence::set_waker(CompletionWaker* waker) {
  MutexLock lock(mu_);
  waker_ = waker;
}

void MirrorFence::wake_drive() {
  MutexLock lock(mu_);
  bump_and_wake();
}

void MirrorFence::mark_retired() {
  MutexLock lock(mu_);
  retired_ = true;
  cv_.notify_all();
}

// ---- MirrorDevice ----

namespace {
constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();
constexpr int kPrimary = 0;
constexpr int kSecondary = 1;
}  // namespace

MirrorDevice::MirrorDevice(std::unique_ptr<DeviceQueue> primary, std::unique_ptr<DeviceQueue> secondary,
                           std::shared_ptr<MirrorFence> fence, std::span<const uint32_t> busy_tags)
    : primary_(std::move(primary)),
      secondary_(std::move(secondary)),
      fence_(std::move(fence)),
      flushes_blocking_(primary_->flushes_blocking() && secondary_->flushes_blocking()),
      transfers_blocking_(primary_->transfers_blocking() && secondary_->transfers_blocking()) {
  // What the primary has in flight from before the mirror was put in place
  // reached the old member alone: the first fence waits for all of it.
  for (uint32_t tag : busy_tags) {
    slot(tag).kind = Kind::legacy;
    fence_->admit_write(0, kAll);
    ++in_flight_[kPrimary];
  }
}

MirrorDevice::~MirrorDevice() = default;

Status MirrorDevice::attach_waker(CompletionWaker& waker) {
  if (Status s = primary_->attach_waker(waker); !s) return s;
  fence_->set_waker(&waker);
  return secondary_->attach_waker(waker);
}

MirrorDevice::Slot& MirrorDevice::slot(uint32_t tag) {
  if (tag >= slots_.size()) slots_.resize(tag + 1);
  return slots_[tag];
}

uint64_t MirrorDevice::io_bytes(const DeviceIo& io) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < io.iovcnt; ++i) n += io.iov[i].iov_len;
  return n;
}

void MirrorDevice::forget_legacy(uint32_t tag) {
  // A tag the drive held but had not started (taken by a submitter for its
  // own dispatch): it was in no IO of the old member's.
  Slot& s = slot(tag);
  if (s.kind != Kind::legacy) return;
  s.kind = Kind::idle;
  fence_->done_write(0, kAll);
  --in_flight_[kPrimary];
}

void MirrorDevice::start_on(int side, const DeviceIo& io, Kind kind) {
  forget_legacy(io.tag);
  Slot& s = slot(io.tag);
  s = Slot{};
  s.kind = kind;
  s.op = io.op;
  (side == kPrimary ? primary_ : secondary_)->start(io);
  ++in_flight_[side];
  started_[side] = true;
}

void MirrorDevice::start_both(const DeviceIo& io, uint64_t end) {
  forget_legacy(io.tag);
  Slot& s = slot(io.tag);
  s = Slot{};
  s.kind = Kind::both;
  s.op = io.op;
  s.begin = io.offset;
  s.end = end;
  primary_->start(io);
  secondary_->start(io);
  ++in_flight_[kPrimary];
  ++in_flight_[kSecondary];
  started_[kPrimary] = started_[kSecondary] = true;
}

// Under the dispatch lock: what a mode allows. A write while mirroring that
// meets the fence (or queues behind a held one) waits in held_.
void MirrorDevice::start(const DeviceIo& io) {
  switch (fence_->mode()) {
    case MirrorMode::primary_only:
      start_on(kPrimary, io, Kind::primary);
      return;
    case MirrorMode::secondary_only:
      start_on(kSecondary, io, Kind::secondary);
      return;
    case MirrorMode::mirroring:
      break;
  }
  if (io.op == IoOp::read) {
    start_on(kPrimary, io, Kind::primary);
  } else if (io.op == IoOp::flush) {
    if (fence_->flushes_both())
      start_both(io, 0);
    else
      start_on(kPrimary, io, Kind::primary);
  } else {
    forget_legacy(io.tag);
    const uint64_t end = io.offset + io_bytes(io);
    if (held_.empty() && fence_->try_admit_write(io.offset, end)) {
      start_both(io, end);
    } else {
      held_.push_back(Held{io, end});
      held_generation_ = fence_->generation();
    }
  }
}

void MirrorDevice::start_held() {
  held_generation_ = fence_->generation();
  size_t i = 0;
  for (; i < held_.size(); ++i) {
    const Held& h = held_[i];
    const MirrorMode mode = fence_->mode();
    if (mode == MirrorMode::primary_only) {
      start_on(kPrimary, h.io, Kind::primary);
    } else if (mode == MirrorMode::secondary_only) {
      start_on(kSecondary, h.io, Kind::secondary);
    } else if (fence_->try_admit_write(h.io.offset, h.end)) {
      start_both(h.io, h.end);
    } else {
      break;
    }
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(i));
  if (i != 0) submit();
}

void MirrorDevice::submit() {
  if (started_[kPrimary] && primary_) primary_->submit();
  if (started_[kSecondary] && secondary_) secondary_->submit();
  started_[kPrimary] = started_[kSecondary] = false;
}

void MirrorDevice::on_completion(bool from_primary, const DeviceCompletion& c) {
  --in_flight_[from_primary ? kPrimary : kSecondary];
  Slot& s = slot(c.tag);
  switch (s.kind) {
    case Kind::idle:
      return;
    case Kind::primary:
    case Kind::secondary:
      s.kind = Kind::idle;
      ready_.push_back(c);
      return;
    case Kind::legacy:
      s.kind = Kind::idle;
      fence_->done_write(0, kAll);
      ready_.push_back(c);
      return;
    case Kind::both:
      break;
  }
  if (from_primary) {
    s.primary_done = true;
    s.primary_result = c.result;
  } else {
    s.secondary_done = true;
    const bool short_write = s.op == IoOp::write && c.result >= 0 && static_cast<uint64_t>(c.result) < s.end - s.begin;
    if (c.result < 0 || short_write) fence_->note_secondary_error(c.result < 0 ? c.result : -EIO);
  }
  if (!s.primary_done || !s.secondary_done) return;
  s.kind = Kind::idle;
  if (s.op == IoOp::write) fence_->done_write(s.begin, s.end);
  // The old member is the volume's truth until the switch: its result is
  // the IO's; the new member's failure ends the replace, not the IO.
  ready_.push_back(DeviceCompletion{c.tag, s.primary_result});
}

bool MirrorDevice::side_retirable(int side) const {
  const MirrorMode mode = fence_->mode();
  const bool unused = side == kPrimary ? mode == MirrorMode::secondary_only : mode == MirrorMode::primary_only;
  const auto& device = side == kPrimary ? primary_ : secondary_;
  return unused && device && in_flight_[side] == 0 && held_.empty() &&
         pinned_[side].load(std::memory_order_seq_cst) == 0;
}

void MirrorDevice::retire_unused() {
  for (int side : {kPrimary, kSecondary}) {
    if (!side_retirable(side)) continue;
    (side == kPrimary ? primary_ : secondary_).reset();
    fence_->mark_retired();
  }
}

size_t MirrorDevice::reap_impl(std::span<DeviceCompletion> out, bool inline_only) {
  if (!held_.empty() && fence_->generation() != held_generation_) start_held();
  if (scratch_.size() < out.size()) scratch_.resize(out.size());
  std::span<DeviceCompletion> buf(scratch_.data(), out.size());
  for (int side : {kPrimary, kSecondary}) {
    DeviceQueue* d = (side == kPrimary ? primary_ : secondary_).get();
    if (d == nullptr) continue;
    const size_t n = inline_only ? d->reap_finished_inline(buf) : d->reap(buf);
    for (size_t i = 0; i < n; ++i) on_completion(side == kPrimary, buf[i]);
  }
  retire_unused();
  const size_t n = std::min(out.size(), ready_.size() - ready_head_);
  std::copy_n(ready_.begin() + static_cast<std::ptrdiff_t>(ready_head_), n, out.begin());
  ready_head_ += n;
  if (ready_head_ == ready_.size()) ready_.clear(), ready_head_ = 0;
  return n;
}

size_t MirrorDevice::reap(std::span<DeviceCompletion> out) { return reap_impl(out, false); }

size_t MirrorDevice::reap_finished_inline(std::span<DeviceCompletion> out) { return reap_impl(out, true); }

bool MirrorDevice::has_ready() const {
  return ready_head_ != ready_.size() || (primary_ && primary_->has_ready()) ||
         (secondary_ && secondary_->has_ready()) || (!held_.empty() && fence_->generation() != held_generation_) ||
         side_retirable(kPrimary) || side_retirable(kSecondary);
}

bool MirrorDevice::prepare_sleep(uint64_t& deadline_ns) {
  if (has_ready()) return false;
  bool may = true;
  if (primary_) may = primary_->prepare_sleep(deadline_ns) && may;
  if (secondary_) may = secondary_->prepare_sleep(deadline_ns) && may;
  return may;
}

// Blocking calls: pin both sides, then read the mode (both seq_cst), so a
// retirement that saw no pin happened under a mode this call now sees.
MirrorMode MirrorDevice::pin_both() {
  pinned_[kPrimary].fetch_add(1, std::memory_order_seq_cst);
  pinned_[kSecondary].fetch_add(1, std::memory_order_seq_cst);
  return fence_->mode();
}

void MirrorDevice::unpin(int side) {
  if (pinned_[side].fetch_sub(1, std::memory_order_seq_cst) != 1) return;
  const MirrorMode mode = fence_->mode();
  const bool unused = side == kPrimary ? mode == MirrorMode::secondary_only : mode == MirrorMode::primary_only;
  if (unused) fence_->wake_drive();  // the drive thread may retire it now
}

int MirrorDevice::flush_blocking() {
  const MirrorMode mode = pin_both();
  const bool on_primary = mode != MirrorMode::secondary_only;
  const bool on_secondary =
      mode == MirrorMode::secondary_only || (mode == MirrorMode::mirroring && fence_->flushes_both());
  const int rp = on_primary ? primary_->flush_blocking() : 0;
  const int rs = on_secondary ? secondary_->flush_blocking() : 0;
  unpin(kPrimary);
  unpin(kSecondary);
  if (mode == MirrorMode::secondary_only) return rs;
  if (rs < 0) fence_->note_secondary_error(rs);
  return rp;
}

int64_t MirrorDevice::transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
  const MirrorMode mode = pin_both();
  int64_t result = 0;
  if (op == IoOp::write && mode == MirrorMode::mirroring) {
    fence_->admit_write(offset, offset + len);
    result = primary_->transfer_blocking(op, offset, buf, len);
    const int64_t rs = secondary_->transfer_blocking(op, offset, buf, len);
    if (rs < 0 || static_cast<uint64_t>(rs) < len) fence_->note_secondary_error(rs < 0 ? static_cast<int>(rs) : -EIO);
    fence_->done_write(offset, offset + len);
  } else if (mode == MirrorMode::secondary_only) {
    result = secondary_->transfer_blocking(op, offset, buf, len);
  } else {
    result = primary_->transfer_blocking(op, offset, buf, len);
  }
  unpin(kPrimary);
  unpin(kSecondary);
  return result;
}

}  // namespace peregrine
