#include "drive.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>

#include "peregrine/util/clock.h"

namespace {

// A spin-wait hint: lets the sibling hyperthread run while we poll.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

namespace peregrine {
namespace {

constexpr uint64_t kPublishIntervalNs = 1000000;  // stats snapshot at most every 1 ms while busy

}  // namespace

Drive::Drive(uint32_t index, const EngineConfig& config, std::unique_ptr<DeviceQueue> device, uint32_t queue_depth)
    : index_(index), config_(config), copies_inline_(device->copies_inline()), device_(std::move(device)) {
  // A submitter pushes only below the high pressure point, at most its
  // whole SubIo pool at once: its queue never needs more room than that.
  size_t inbox_capacity = config.pressure_high + config.subios_per_submitter + 1;
  inbox_.reserve(config.max_submitters);
  for (uint32_t i = 0; i < config.max_submitters; ++i) inbox_.push_back(std::make_unique<SubIoQueue>(inbox_capacity));
  tags_.resize(queue_depth);
  for (TagSlot& t : tags_) t.iov.resize(config.max_iovecs);
  free_tags_.reserve(queue_depth);
  for (uint32_t t = queue_depth; t > 0; --t) free_tags_.push_back(t - 1);
  incoming_.reserve(inbox_capacity * 4);
  completions_.resize(queue_depth + 16);
  counters_.queue_depth = queue_depth;
  published_.queue_depth = queue_depth;
}

Status Drive::attach(DriveThreadSleep& sleep) {
  sleep_ = &sleep;
  MutexLock lock(dispatch_mutex_);  // no other thread yet: for the analysis
  return device_->attach_waker(*sleep.waker);
}

void Drive::request_stop() {
  stopping_.store(true);
  if (sleep_ != nullptr) sleep_->waker->wake();  // null: the engine failed before its threads
}

// ---- submitter side, per-drive scheduler ----

void Drive::push(uint32_t slot, SubIo* const* items, size_t n) {
  if (queued_.load() >= config_.pressure_high) {
    if (config_.before_submitter_blocks) config_.before_submitter_blocks();
    pressure_waits_.fetch_add(1, std::memory_order_relaxed);
    pressure_waiters_.fetch_add(1);
    dispatch_held();  // what the drive holds counts towards the pressure point
    {
      MutexLock lock(pressure_mutex_);
      lock.wait(pressure_cv_, [&] { return queued_.load() < config_.pressure_low || stopping_.load(); });
    }
    pressure_waiters_.fetch_sub(1);
  }
  // Decided while the items are still ours: once in the inbox the drive
  // may complete them, and their requests go back to their owners. Only
  // while the drive holds: every other push (O_DIRECT IO) looks at no
  // item. A hold that starts meanwhile costs one wake-up too many.
  bool holdable = holding_.load();
  uint64_t holdable_bytes = 0;
  for (size_t i = 0; i < n && holdable; ++i) {
    holdable = items[i]->op == IoOp::write && items[i]->parent->may_hold && !items[i]->retried;
    holdable_bytes += items[i]->length;
  }
  uint32_t seen = inbox_count_.load();
  while (seen <= slot && !inbox_count_.compare_exchange_weak(seen, slot + 1)) {
  }
  queued_.fetch_add(n);
  outstanding_.fetch_add(n);
  SubIoQueue& q = *inbox_[slot];
  size_t pushed = 0;
  while (pushed < n) {
    pushed += q.push(items + pushed, n - pushed);
    if (pushed < n) {
      // Only when the drive thread has fallen a whole queue behind.
      sleep_->waker->wake();
      std::this_thread::yield();
    }
  }
  // Pairs with may_sleep(): either the drive thread sees the epoch move
  // (and so our items), or we see it asleep and wake it. Writes nobody
  // waits for join a hold without a wake-up: the drive thread sleeps only
  // until the hold ends, and a drive thread that ended it has cleared
  // holding_ before it looks at the epoch.
  // The drive is woken all the same once what it holds reaches
  // max_io_bytes: a merged IO could not grow further.
  inbox_epoch_.fetch_add(1);
  if (holdable && holding_.load() &&
      hold_pushed_bytes_.fetch_add(holdable_bytes) + holdable_bytes < config_.max_io_bytes)
    return;
  sleep_->wake_if_sleeping();
}

void Drive::dispatch_held() {
  // Counted whether or not the drive holds anything yet: the caller's
  // writes may still be in an inbox, and the round that takes them in must
  // not hold them (a drive thread that sees the count move does not sleep
  // before a round has served it). Woken only if it holds: a push that
  // found it not holding woke it already, and an fsync of a file whose
  // writes went out wakes nobody.
  if (config_.hold_writes_ns == 0) return;
  held_wanted_.fetch_add(1);
  if (holding_.load()) sleep_->wake_if_sleeping();
}

void Drive::wake_for_inline_completions() {
  // A device that finishes IO inside start() (copy-inline members) posts no
  // completion to end the drive thread's sleep. We hold the dispatch lock,
  // so the drive thread either has yet to check this drive in may_sleep()
  // (and will see these), or has said it sleeps: then wake it to reap them.
  if (device_->has_ready()) sleep_->wake_if_sleeping();
}

bool Drive::try_dispatch_inline(SubIo* const* items, size_t n, bool caller_completes) {
  if (queued_.load() != 0) return false;
  if (!dispatch_mutex_.try_lock()) return false;
  MutexLock lock(dispatch_mutex_, std::adopt_lock);
  if (backlog_head_ != nullptr || free_tags_.size() < n) return false;
  outstanding_.fetch_add(n);
  queued_.fetch_add(n);
  merge_into_backlog(items, n);
  dispatch_backlog(monotonic_ns());
  device_->submit();
  if (!caller_completes) wake_for_inline_completions();
  ++counters_.inline_batches;
  dirty_ = true;
  return true;
}

void Drive::complete_inline() {
  // Blocking: the drive thread holds the lock only for a round, and if it
  // ran in between it has reaped these itself (then nothing is left here).
  // The backlog needs no drive thread: the inline dispatch found it empty,
  // and only the lock holder fills it.
  MutexLock lock(dispatch_mutex_);
  // What try_dispatch_inline() would have woken the drive thread for.
  const bool was_ready = device_->has_ready();
  // Only what finished inside start(): the kernel's completion queue (IO,
  // wake-ups) stays the drive thread's, which may be waiting on it now.
  uint64_t now = 0;
  size_t done = reap_and_complete(true, &now);
  // Still on the device after the reap (a shaped member holds it until the
  // modelled completion time, and only the drive thread arms that timer):
  // wake the drive thread after all. A member that completes through the
  // kernel wakes it itself.
  if (was_ready && in_flight_ios_ != 0) sleep_->wake_if_sleeping();
  if (done == 0) return;
  after_completions(now);
}

void Drive::after_completions(uint64_t now) {
  device_->submit();  // a short transfer complete() sent again
  release_pressure();
  if (tag_waiters_.load() > 0 && !free_tags_.empty()) tag_cv_.notify_all();
  // At most every kPublishIntervalNs: a reader of stats() publishes what
  // is newer itself.
  publish_stats(false, now);
}

bool Drive::poll_inline(uint64_t deadline_ns, bool (*stop)(const void*), const void* stop_ctx) {
  for (;;) {
    if (stop != nullptr && stop(stop_ctx)) return false;
    // try_lock: while the drive thread holds the lock for a round it reaps
    // these itself; spinning on the lock would only delay that round.
    if (dispatch_mutex_.try_lock()) {
      MutexLock lock(dispatch_mutex_, std::adopt_lock);
      uint64_t now = 0;
      if (size_t n = reap_and_complete(false, &now); n != 0) {
        counters_.polled += n;
        dirty_ = true;
        after_completions(now);
      }
      if (in_flight_ios_ == 0) return true;
    }
    if (monotonic_ns() >= deadline_ns) return false;
    cpu_relax();
  }
}

size_t Drive::reap_here() {
  if (outstanding() == 0 || !dispatch_mutex_.try_lock()) return 0;
  MutexLock lock(dispatch_mutex_, std::adopt_lock);
  uint64_t now = 0;
  const size_t n = reap_and_complete(false, &now);
  if (n != 0) {
    counters_.polled += n;
    dirty_ = true;
    after_completions(now);
  }
  return n;
}

int Drive::flush_blocking() {
  // What the flush covers is what had completed when it started, as for a
  // flush through the ring (TagSlot::flush_covers).
  std::shared_lock swap(device_swap_mutex_);
  DeviceQueue& device = device_for_blocking_flush();
  if (!device.flushes_blocking()) return -EOPNOTSUPP;
  const uint64_t covers = writes_done_.load(std::memory_order_acquire);
  const uint64_t start = monotonic_ns();
  int error = device.flush_blocking();
  const uint64_t now = monotonic_ns();
  MutexLock lock(dispatch_mutex_);
  ++counters_.ios;
  ++counters_.flushes;
  counters_.device_latency.record(now - start);
  dirty_ = true;
  if (error == 0) {
    if (covers > flushed_through_.load(std::memory_order_relaxed))
      flushed_through_.store(covers, std::memory_order_release);
    return 0;
  }
  return blocking_failure(IoErrorReport{index_, IoOp::flush, 0, 0, error, false});
}

int Drive::blocking_failure(const IoErrorReport& report) {
  ++counters_.errors;
  if (config_.on_io_error) config_.on_io_error(report);
  // As complete() reports it: a device that is gone is an IO error.
  return report.error == -ENODEV || report.error == -ENXIO ? -EIO : report.error;
}

int Drive::transfer_blocking(IoOp op, uint64_t member_offset, std::byte* buf, uint64_t len) {
  std::shared_lock swap(device_swap_mutex_);
  DeviceQueue& device = device_for_blocking_flush();
  if (op == IoOp::flush || !device.transfers_blocking()) return -EOPNOTSUPP;
  const uint64_t start = monotonic_ns();
  const int64_t moved = device.transfer_blocking(op, member_offset, buf, len);
  const uint64_t now = monotonic_ns();
  const std::optional<IoErrorReport> failure = transfer_failure(op, member_offset, len, moved);
  MutexLock lock(dispatch_mutex_);
  ++counters_.subios;
  ++counters_.ios;
  if (op == IoOp::read) {
    ++counters_.read_ios;
    counters_.bytes_read += len;
  } else {
    ++counters_.write_ios;
    counters_.bytes_written += len;
    // As complete() counts it, a failed write too: a flush sent next must
    // cover what it left on the drive.
    writes_done_.fetch_add(1, std::memory_order_release);
  }
  counters_.device_latency.record(now - start);
  dirty_ = true;
  return failure ? blocking_failure(*failure) : 0;
}

int Drive::transfer_direct(IoOp op, uint64_t member_offset, std::byte* buf, uint64_t len, DirectCounts& counts) {
  std::shared_lock swap(device_swap_mutex_);
  DeviceQueue& device = device_for_blocking_flush();
  if (!device.transfers_blocking()) return -EOPNOTSUPP;
  const int64_t moved = device.transfer_blocking(op, member_offset, buf, len);
  counts.count(op, len);
  if (op == IoOp::write) writes_done_.fetch_add(1, std::memory_order_release);  // as transfer_blocking()
  const std::optional<IoErrorReport> failure = transfer_failure(op, member_offset, len, moved);
  if (!failure) return 0;
  MutexLock lock(dispatch_mutex_);
  dirty_ = true;
  return blocking_failure(*failure);
}

std::optional<IoErrorReport> Drive::transfer_failure(IoOp op, uint64_t member_offset, uint64_t len,
                                                     int64_t moved) const {
  if (moved >= 0 && static_cast<uint64_t>(moved) == len) return std::nullopt;
  const bool past_end = moved >= 0;  // the member ended before the volume said it would
  return IoErrorReport{index_, op, member_offset, len, past_end ? -EIO : static_cast<int>(moved), past_end};
}

Status Drive::install_mirror(std::unique_ptr<DeviceQueue> secondary, std::shared_ptr<MirrorFence> fence) {
  std::unique_lock swap(device_swap_mutex_);
  if (Status s = secondary->attach_waker(*sleep_->waker); !s) return s;
  fence->set_waker(sleep_->waker.get());
  MutexLock lock(dispatch_mutex_);
  std::vector<bool> is_free(tags_.size(), false);
  for (uint32_t t : free_tags_) is_free[t] = true;
  std::vector<uint32_t> busy;
  for (uint32_t t = 0; t < tags_.size(); ++t)
    if (!is_free[t]) busy.push_back(t);
  copies_inline_.store(false);  // the mirror's writes must pass through it
  device_ = std::make_unique<MirrorDevice>(std::move(device_), std::move(secondary), std::move(fence), busy);
  sleep_->wake_if_sleeping();
  return Status::ok();
}

// ---- submitter side, per-volume scheduler ----

bool Drive::try_acquire_tag(uint32_t* tag) {
  MutexLock lock(dispatch_mutex_);
  if (free_tags_.empty()) {
    ++counters_.tag_waits;
    dirty_ = true;
    return false;
  }
  *tag = free_tags_.back();
  free_tags_.pop_back();
  return true;
}

void Drive::wait_for_tag() {
  MutexLock lock(dispatch_mutex_);
  tag_waiters_.fetch_add(1);
  lock.wait(tag_cv_, [&] {
    dispatch_mutex_.assert_held();  // the predicate runs under the lock
    return !free_tags_.empty();
  });
  tag_waiters_.fetch_sub(1);
}

// The tag is the caller's until dispatch_tags(); no lock needed. (The
// analysis cannot see ownership of one slot of the guarded vector.)
void Drive::bind_tag(uint32_t tag, SubIo* head) NO_THREAD_SAFETY_ANALYSIS { tags_[tag].head = head; }

SubIo* Drive::tag_chain(uint32_t tag) NO_THREAD_SAFETY_ANALYSIS { return tags_[tag].head; }

void Drive::dispatch_tags(const uint32_t* tags, size_t n) {
  MutexLock lock(dispatch_mutex_);
  uint64_t now = monotonic_ns();
  for (size_t i = 0; i < n; ++i) {
    SubIo* head = tags_[tags[i]].head;
    counters_.subios += head->chain_count;
    counters_.merged += head->chain_count - 1;
    outstanding_.fetch_add(head->chain_count);
    for (SubIo* s = head; s != nullptr; s = s->next) counters_.stack_latency.record(now - s->arrival_ns);
    start_io(tags[i], head, now);
  }
  device_->submit();
  wake_for_inline_completions();
  dirty_ = true;
}

// ---- drive thread ----

void Drive::run_round() {
  MutexLock lock(dispatch_mutex_);
  round_epoch_ = inbox_epoch_.load();
  held_wanted_round_ = held_wanted_.load();  // before the inboxes: see held_wanted_
  reap_and_complete();
  size_t drained = drain_inboxes();
  // Held writes are taken apart and sorted again with the new IO, so that
  // the writes that arrived one by one go out as one.
  if (drained > 0 && holding_.load()) drained += regather_backlog();
  if (drained > 0) merge_into_backlog(incoming_.data(), drained);
  const uint64_t now = monotonic_ns();
  // Only here, on the drive thread, which sleeps no longer than the hold.
  if (!hold_backlog(now)) {
    // Cleared before the thread looks at the epoch to sleep (see holding_).
    if (holding_.load()) holding_.store(false);
    dispatch_backlog(now);
    backlog_left_ = backlog_head_ != nullptr;
  }
  after_completions(now);  // also submits what the dispatch started
}

bool Drive::may_sleep(uint64_t& deadline_ns) {
  MutexLock lock(dispatch_mutex_);
  // The thread set its sleeping flag before this: a push after this check
  // sees it and wakes the thread; one before it moved the epoch.
  if (inbox_epoch_.load() != round_epoch_ || held_wanted_.load() != held_wanted_served_ ||
      !device_->prepare_sleep(deadline_ns))
    return false;
  if (holding_.load() && (deadline_ns == 0 || hold_until_ns_ < deadline_ns)) deadline_ns = hold_until_ns_;
  publish_stats(false, monotonic_ns());
  return true;
}

void Drive::publish_final() {
  MutexLock lock(dispatch_mutex_);
  publish_stats(true, monotonic_ns());
}

bool Drive::finished() const { return stopping_.load() && outstanding_.load() == 0 && inboxes_empty(); }

bool Drive::inboxes_empty() const {
  uint32_t n = inbox_count_.load();
  for (uint32_t i = 0; i < n; ++i) {
    if (inbox_[i]->read_available() != 0) return false;
  }
  return true;
}

size_t Drive::drain_inboxes() {
  incoming_.clear();
  uint32_t n = inbox_count_.load();
  for (uint32_t i = 0; i < n; ++i) {
    SubIoQueue& q = *inbox_[i];
    size_t avail = q.read_available();
    if (avail == 0) continue;
    size_t at = incoming_.size();
    incoming_.resize(at + avail);
    size_t got = q.pop(incoming_.data() + at, avail);
    incoming_.resize(at + got);
  }
  return incoming_.size();
}

void Drive::merge_into_backlog(SubIo* const* items, size_t n) {
  if (n == 0) return;
  counters_.subios += n;
  // Sort a copy of the pointers in place: the callers' arrays are ours
  // (incoming_) or the submitter's plug list, which it clears afterwards.
  SubIo** v = const_cast<SubIo**>(items);
  for (size_t i = 0; i < n; ++i) v[i]->seq = seq_++;
  // Flushes sort last so that a batch's reads and writes go out first.
  auto key = [](const SubIo* s) { return s->op == IoOp::flush ? ~uint64_t{0} : s->member_offset; };
  std::sort(v, v + n, [&](const SubIo* a, const SubIo* b) {
    uint64_t ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a->seq < b->seq;
  });
  SubIo* head = nullptr;
  for (size_t i = 0; i < n; ++i) {
    SubIo* s = v[i];
    s->next = nullptr;
    bool joins = head != nullptr && s->op != IoOp::flush && s->op == head->op &&
                 s->via_page_cache == head->via_page_cache &&
                 head->member_offset + head->chain_bytes == s->member_offset &&
                 head->chain_bytes + s->length <= config_.max_io_bytes && head->chain_count + 1 <= config_.max_iovecs;
    if (joins) {
      head->chain_tail->next = s;
      head->chain_tail = s;
      head->chain_bytes += s->length;
      ++head->chain_count;
      ++counters_.merged;
      continue;
    }
    head = s;
    head->chain_tail = s;
    head->chain_bytes = s->length;
    head->chain_count = 1;
    head->backlog_next = nullptr;
    if (backlog_tail_ != nullptr) {
      backlog_tail_->backlog_next = head;
    } else {
      backlog_head_ = head;
    }
    backlog_tail_ = head;
    ++backlog_ios_;
  }
  dirty_ = true;
}

bool Drive::hold_backlog(uint64_t now) {
  const bool wanted = held_wanted_round_ != held_wanted_served_;
  held_wanted_served_ = held_wanted_round_;
  // A backlog left over for want of tags is not held again: its writes
  // have had their hold, and a thread may be waiting for them already.
  if (config_.hold_writes_ns == 0 || backlog_head_ == nullptr || wanted || stopping_.load() ||
      pressure_waiters_.load() != 0 || (backlog_left_ && !holding_.load()))
    return false;
  uint64_t bytes = 0;
  for (SubIo* head = backlog_head_; head != nullptr; head = head->backlog_next) {
    for (SubIo* s = head; s != nullptr; s = s->next) {
      if (s->op != IoOp::write || !s->parent->may_hold || s->retried) return false;
    }
    bytes += head->chain_bytes;
  }
  if (bytes >= config_.max_io_bytes) return false;
  if (!holding_.load()) {
    hold_until_ns_ = now + config_.hold_writes_ns;
    hold_pushed_bytes_.store(bytes);
    holding_.store(true);
    ++counters_.holds;
    dirty_ = true;
  }
  return now < hold_until_ns_;
}

size_t Drive::regather_backlog() {
  regathered_.clear();
  uint64_t heads = 0;
  for (SubIo* head = backlog_head_; head != nullptr; head = head->backlog_next) {
    for (SubIo* s = head; s != nullptr; s = s->next) regathered_.push_back(s);
    ++heads;
  }
  const size_t n = regathered_.size();
  // First, so that they keep their place before the newer IO among equals.
  incoming_.insert(incoming_.begin(), regathered_.begin(), regathered_.end());
  // Counted again by merge_into_backlog(); queued_ still counts them.
  counters_.subios -= n;
  counters_.merged -= n - heads;
  backlog_head_ = backlog_tail_ = nullptr;
  backlog_ios_ = 0;
  return n;
}

void Drive::dispatch_backlog(uint64_t now) {
  while (backlog_head_ != nullptr && !free_tags_.empty()) {
    SubIo* head = backlog_head_;
    backlog_head_ = head->backlog_next;
    if (backlog_head_ == nullptr) backlog_tail_ = nullptr;
    --backlog_ios_;
    uint32_t tag = free_tags_.back();
    free_tags_.pop_back();
    queued_.fetch_sub(head->chain_count);
    for (SubIo* s = head; s != nullptr; s = s->next) counters_.stack_latency.record(now - s->arrival_ns);
    start_io(tag, head, now);
  }
  if (backlog_head_ != nullptr) {
    ++counters_.tag_waits;
    dirty_ = true;
  }
}

void Drive::start_io(uint32_t tag, SubIo* head, uint64_t now) {
  TagSlot& t = tags_[tag];
  t.head = head;
  t.op = head->op;
  t.offset = head->member_offset;
  t.remaining = head->chain_bytes;
  t.dispatch_ns = now;
  t.flush_covers = writes_done_.load(std::memory_order_relaxed);
  t.iov_first = 0;
  t.iovcnt = 0;
  for (SubIo* s = head; s != nullptr; s = s->next) {
    t.iov[t.iovcnt++] = iovec{s->buffer, s->length};
  }
  ++in_flight_ios_;
  ++counters_.ios;
  if (t.op == IoOp::read) {
    ++counters_.read_ios;
    counters_.bytes_read += t.remaining;
  }
  if (t.op == IoOp::write) {
    ++counters_.write_ios;
    counters_.bytes_written += t.remaining;
  }
  if (t.op == IoOp::flush) ++counters_.flushes;
  device_->start(DeviceIo{tag, t.op, t.offset, t.iov.data(), t.iovcnt, head->via_page_cache});
}

size_t Drive::reap_and_complete(bool finished_inline_only, uint64_t* now_out) {
  size_t total = 0;
  for (;;) {
    size_t n = finished_inline_only ? device_->reap_finished_inline(completions_) : device_->reap(completions_);
    if (n == 0) break;
    uint64_t now = monotonic_ns();
    if (now_out != nullptr) *now_out = now;
    for (size_t i = 0; i < n; ++i) complete(completions_[i], now);
    total += n;
  }
  return total;
}

void Drive::complete(const DeviceCompletion& c, uint64_t now) {
  TagSlot& t = tags_[c.tag];
  int error = 0;
  bool past_end = false;
  if (c.result < 0) {
    error = c.result;
  } else if (t.op != IoOp::flush && static_cast<uint64_t>(c.result) < t.remaining) {
    if (c.result == 0) {
      error = -EIO;  // the member ended before the volume said it would
      past_end = true;
    } else {
      // Short transfer: send the rest with the same tag.
      uint64_t done = static_cast<uint64_t>(c.result);
      t.offset += done;
      t.remaining -= done;
      while (done > 0) {
        iovec& v = t.iov[t.iov_first];
        if (done >= v.iov_len) {
          done -= v.iov_len;
          ++t.iov_first;
        } else {
          v.iov_base = static_cast<char*>(v.iov_base) + done;
          v.iov_len -= done;
          done = 0;
        }
      }
      ++counters_.short_ios;
      device_->start(DeviceIo{c.tag, t.op, t.offset, t.iov.data() + t.iov_first, t.iovcnt - t.iov_first,
                              t.head->via_page_cache});
      return;
    }
  }
  counters_.device_latency.record(now - t.dispatch_ns);
  // Counted before the requests complete, so that a flush their owner sends
  // next sees this drive needs one. A failed write counts too: what it
  // left on the drive is as volatile as a good one's.
  if (t.op == IoOp::write) writes_done_.fetch_add(1, std::memory_order_release);
  if (t.op == IoOp::flush && error == 0 && t.flush_covers > flushed_through_.load(std::memory_order_relaxed))
    flushed_through_.store(t.flush_covers, std::memory_order_release);
  SubIo* head = t.head;
  t.head = nullptr;
  --in_flight_ios_;
  free_tags_.push_back(c.tag);
  dirty_ = true;
  if (error != 0 && head->chain_count > 1) {
    retry_unmerged(head);
    return;
  }
  if (error != 0) {
    ++counters_.errors;
    if (config_.on_io_error)
      config_.on_io_error(IoErrorReport{index_, t.op, head->member_offset, head->chain_bytes, error, past_end});
    // A device that is gone is, to the volume's users, an IO error.
    if (error == -ENODEV || error == -ENXIO) error = -EIO;
  }
  finish_chain(head, error);
}

void Drive::retry_unmerged(SubIo* head) {
  // A merged IO failed. Send each piece again on its own, ahead of the
  // backlog, so that only the requests whose own bytes fail see the error.
  SubIo* first = nullptr;
  SubIo* last = nullptr;
  uint32_t count = 0;
  for (SubIo* s = head; s != nullptr;) {
    SubIo* next = s->next;
    s->next = nullptr;
    s->retried = true;  // never held or merged again (hold_backlog, regather_backlog)
    s->chain_tail = s;
    s->chain_bytes = s->length;
    s->chain_count = 1;
    s->backlog_next = nullptr;
    if (last != nullptr) {
      last->backlog_next = s;
    } else {
      first = s;
    }
    last = s;
    ++count;
    s = next;
  }
  last->backlog_next = backlog_head_;
  backlog_head_ = first;
  if (backlog_tail_ == nullptr) backlog_tail_ = last;
  backlog_ios_ += count;
  queued_.fetch_add(count);  // dispatch_backlog() takes them off again
  ++counters_.retried_unmerged;
  // A hold would regather the pieces into the IO that failed: it ends.
  if (holding_.load()) holding_.store(false);
}

namespace {

// Tells a submitter that SubIos came back (see take_subio's wait).
void announce_returns(SubmitterSlot* owner) {
  owner->return_epoch.fetch_add(1);
  if (owner->waiting_for_returns.load()) owner->return_epoch.notify_all();
}

}  // namespace

void Drive::finish_chain(SubIo* head, int error) {
  SubIo* s = head;
  SubmitterSlot* announce = nullptr;
  while (s != nullptr) {
    SubIo* next = s->next;
    Request* r = s->parent;
    SubmitterSlot* owner = s->owner;
    uint32_t id = s->id;
    if (error != 0) {
      int expected = 0;
      r->error.compare_exchange_strong(expected, error);
    }
    // Hand the SubIo back before the callback: the callback may reuse the
    // request, but never this SubIo. One announcement per run of SubIos
    // from the same submitter.
    owner->returns_of(index_).push(id);
    if (announce != nullptr && announce != owner) announce_returns(announce);
    announce = owner;
    outstanding_.fetch_sub(1);
    if (r->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      r->on_complete(*r, r->error.load(std::memory_order_relaxed));
    }
    s = next;
  }
  if (announce != nullptr) announce_returns(announce);
}

void Drive::release_pressure() {
  if (pressure_waiters_.load() == 0) return;
  if (queued_.load() >= config_.pressure_low && !stopping_.load()) return;
  MutexLock lock(pressure_mutex_);
  pressure_cv_.notify_all();
}

void Drive::publish_stats(bool force, uint64_t now) {
  if (!dirty_) return;
  if (!force && now - last_publish_ns_ < kPublishIntervalNs) return;
  last_publish_ns_ = now;
  dirty_ = false;
  MutexLock lock(stats_mutex_);
  published_ = counters_;
  published_.backlog = backlog_ios_;
  published_.in_flight = in_flight_ios_;
}

DriveStats Drive::stats() {
  // Completions publish at most every kPublishIntervalNs (a copy of the
  // counters and histograms per IO cost 1-2% of the daemon's CPU at 4 KiB):
  // publish what is newer now, so a reader never sees a stale snapshot,
  // even of a drive whose thread sleeps while submitters serve it inline.
  {
    MutexLock lock(dispatch_mutex_);
    publish_stats(true, monotonic_ns());
  }
  DriveStats s;
  {
    MutexLock lock(stats_mutex_);
    s = published_;
  }
  s.queued = queued_.load();
  s.pressure_waits = pressure_waits_.load();
  return s;
}

}  // namespace peregrine
