#include "peregrine/fs/engine_volume_io.h"

#include <atomic>
#include <cerrno>

#include "peregrine/fs/read_turn.h"

namespace peregrine::fs {
namespace {

// A caller that reaps its own IO has nothing else to do until it is done:
// it waits for a member with latency by polling (engine.inline_poll_us)
// rather than sleeping until a drive thread wakes it.
bool never_stop(const void*) { return false; }

struct Wait {
  std::atomic<int> done{0};
  int result = 0;
  static void complete(Request& r, int result) {
    auto* w = static_cast<Wait*>(r.context);
    w->result = result;
    w->done.store(1, std::memory_order_release);
    w->done.notify_one();
  }
};

}  // namespace

EngineVolumeIo::EngineVolumeIo(SubmitterPool& pool, std::vector<MemberFile>* members)
    : pool_(pool), members_(members), counters_(new Counters[kEngineMaxDrives]) {}

int EngineVolumeIo::run(IoOp op, uint64_t offset, std::byte* buf, uint64_t len, Submitter::Completions where,
                        bool* waited) {
  // A FUSE worker may hold staged IO of its own (fuse.batch_requests): hand
  // it on rather than let it wait behind this call, and let another worker
  // read requests meanwhile.
  pool_.unplug_this_thread();
  ReadTurn::leave_held_turn();
  Submitter* sub = pool_.acquire();
  if (sub == nullptr) return -EAGAIN;
  Request r;
  r.op = op;
  r.offset = offset;
  r.length = len;
  r.buffer = buf;
  Wait w;
  r.on_complete = &Wait::complete;
  r.context = &w;
  if (where == Submitter::Completions::here) sub->set_poll_stop(&never_stop, nullptr);
  int rc = sub->add(r);
  sub->unplug(where);
  pool_.release(sub);
  if (rc != 0) return rc;
  if (waited != nullptr && w.done.load(std::memory_order_acquire) == 0) *waited = true;
  w.done.wait(0, std::memory_order_acquire);
  return w.result;
}

int EngineVolumeIo::read(uint64_t offset, std::span<std::byte> out) {
  return run_lone_or_through_engine(IoOp::read, offset, out.data(), out.size());
}

int EngineVolumeIo::write(uint64_t offset, std::span<const std::byte> data) {
  // The engine only reads from a write's buffer.
  return run_lone_or_through_engine(IoOp::write, offset, const_cast<std::byte*>(data.data()), data.size());
}

int EngineVolumeIo::run_lone_or_through_engine(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
  // As run() does before it waits.
  pool_.unplug_this_thread();
  ReadTurn::leave_held_turn();
  if (int rc = pool_.engine().transfer_lone_piece(op, offset, buf, len); rc != -EOPNOTSUPP) return rc;
  return run(op, offset, buf, len);
}

int EngineVolumeIo::read_here(uint64_t offset, std::span<std::byte> out, bool* waited) {
  return run(IoOp::read, offset, out.data(), out.size(), Submitter::Completions::here, waited);
}

int EngineVolumeIo::write_here(uint64_t offset, std::span<const std::byte> data, bool* waited) {
  return run(IoOp::write, offset, const_cast<std::byte*>(data.data()), data.size(), Submitter::Completions::here,
             waited);
}

int EngineVolumeIo::flush() {
  // As run() does before it waits: hand on staged IO, and let another
  // worker read requests meanwhile.
  pool_.unplug_this_thread();
  ReadTurn::leave_held_turn();
  if (int rc = pool_.engine().flush_lone_drive(); rc != -EOPNOTSUPP) return rc;
  return run(IoOp::flush, 0, nullptr, 0);
}

int EngineVolumeIo::discard(uint64_t offset, uint64_t length) {
  if (members_ == nullptr || members_->empty()) return -EOPNOTSUPP;
  if (length == 0) return 0;
  std::shared_lock lock(members_mu_);
  if (discards_stopped_) return -EOPNOTSUPP;
  int first_error = 0;
  pool_.engine().map().member_spans(offset, length, [&](uint32_t m, uint64_t moff, uint64_t mlen) {
    if (m >= members_->size()) return;
    Counters& c = counters_[m];
    c.discards.fetch_add(1, std::memory_order_relaxed);
    int rc = (*members_)[m].discard(moff, mlen);
    if (rc == 0) {
      c.bytes.fetch_add(mlen, std::memory_order_relaxed);
    } else {
      if (rc != -EOPNOTSUPP) c.errors.fetch_add(1, std::memory_order_relaxed);
      if (first_error == 0) first_error = rc;
    }
  });
  return first_error;
}

void EngineVolumeIo::swap_member(uint32_t index, MemberFile& other) {
  std::unique_lock lock(members_mu_);
  if (members_ != nullptr && index < members_->size()) std::swap((*members_)[index], other);
}

void EngineVolumeIo::stop_discards() {
  std::unique_lock lock(members_mu_);
  discards_stopped_ = true;
}

void EngineVolumeIo::resume_discards() {
  std::unique_lock lock(members_mu_);
  discards_stopped_ = false;
}

void EngineVolumeIo::add_members(std::vector<MemberFile>&& added) {
  std::unique_lock lock(members_mu_);
  if (members_ == nullptr) return;
  for (MemberFile& m : added) members_->push_back(std::move(m));
}

DiscardCounts EngineVolumeIo::discard_counts(uint32_t member) const {
  if (member >= kEngineMaxDrives) return {};
  const Counters& c = counters_[member];
  return DiscardCounts{c.discards.load(std::memory_order_relaxed), c.bytes.load(std::memory_order_relaxed),
                       c.errors.load(std::memory_order_relaxed)};
}

}  // namespace peregrine::fs
