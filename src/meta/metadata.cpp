// Metadata: mount (checkpoint + replay + rebuild), transactions, group
// commit entry points, checkpoints, unmount.
#include "peregrine/meta/metadata.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <random>

#include "peregrine/meta/checkpoint.h"
#include "peregrine/util/clock.h"
#include "txn_builder.h"

namespace peregrine::meta {

namespace {
int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Metadata::Metadata(VolumeIo& io, const Geometry& g, Options opt, MetaLayout layout)
    : io_(io), geo_(g), data_size_(g.data_size), opt_(std::move(opt)), default_clock_(!opt_.clock), layout_(layout) {
  if (default_clock_) opt_.clock = realtime_ns;
}

int64_t Metadata::coarse_now() const { return default_clock_ ? realtime_coarse_ns() : opt_.clock(); }

Metadata::~Metadata() {
  discarder_.reset();
  if (journal_) journal_->stop_background();
}

namespace {

using MountClock = std::chrono::steady_clock;
double ms_since(MountClock::time_point t) {
  return std::chrono::duration<double, std::milli>(MountClock::now() - t).count();
}

}  // namespace

Expected<std::unique_ptr<Metadata>> Metadata::mount(VolumeIo& io, const Geometry& g, Options opt) {
  if (opt.skip_replay && !opt.read_only)
    return Status::error(EINVAL,
                         "metadata: skipping the journal needs a read-only mount (a read-write one would "
                         "overwrite what it did not apply)");
  auto layout = MetaLayout::compute(g, opt.journal_size);
  if (!layout) return layout.status();
  if (g.data_offset + g.data_size > io.size() || g.meta_offset + g.meta_size > io.size())
    return Status::error(EINVAL, "metadata or data area extends past the end of the volume");
  std::unique_ptr<Metadata> md(new Metadata(io, g, std::move(opt), *layout));
  MountReport& rep = md->report_;

  auto start = md->load_model();
  if (!start) return start.status();
  auto t = MountClock::now();
  if (Status s = md->rebuild_allocator(); !s) return s;
  md->open_journal(*start);
  if (md->opt_.read_only) {
    // Replayed in memory only: no orphan is freed, no checkpoint written and
    // no committer started, so nothing reaches the members. The journal
    // stays as it is, for the next read-write mount to apply.
    rep.read_only = true;
    rep.rebuild_ms = ms_since(t);
    return md;
  }
  md->free_orphans();
  rep.rebuild_ms = ms_since(t);
  t = MountClock::now();
  // A grown volume checkpoints at once, so the checkpoint records the new
  // data area from now on.
  if (rep.fresh || rep.replayed_records > 0 || rep.orphans_freed > 0 || rep.grown_from != 0) {
    if (int rc = md->journal_->checkpoint(); rc != 0)
      return Status::error(-rc, "metadata: checkpoint at mount failed: " + md->last_error());
    rep.checkpoint_ms = ms_since(t);
  }
  md->journal_->start_background(md->opt_.commit_interval_ms);
  md->discarder_ = std::make_unique<Discarder>(*md->alloc_, io);
  if (md->opt_.discard) md->discarder_->start_online();
  return md;
}

// Not checked by the thread-safety analysis: it builds the Model before any
// other thread can reach this Metadata, so it writes model_ without ns_mu_.
Expected<JournalPosition> Metadata::load_model() NO_THREAD_SAFETY_ANALYSIS {
  MountReport& rep = report_;
  auto t = MountClock::now();
  SlotState slots[2];
  const int best = newest_valid_checkpoint(io_, layout_, slots);
  rep.read_ms = ms_since(t);
  t = MountClock::now();
  if (best < 0) {
    if (!(slots[0].empty && slots[1].empty))
      return Status::error(EUCLEAN, "metadata: no valid checkpoint (slot 0: " + slots[0].problem +
                                        "; slot 1: " + slots[1].problem + "); run fsck");
    rep.fresh = true;
    model_ = Model::make_fresh(now());
    return JournalPosition{};
  }
  const CheckpointHeader& h = slots[best].header;
  if (h.journal_size != layout_.journal_size || h.data_offset != geo_.data_offset)
    return Status::error(EUCLEAN, "metadata: checkpoint was written for another geometry (journal " +
                                      std::to_string(h.journal_size) + ", data " + std::to_string(h.data_offset) +
                                      "+" + std::to_string(h.data_size) + ")");
  // A smaller data area in the checkpoint is a volume that grew (peregrine
  // grow): the new end only adds free space. A larger one would leave
  // extents past the end, so it is refused rather than trimmed.
  if (Status s = check_checkpoint_data_size(h.data_size, geo_.data_size); !s)
    return Status::error(s.errnum(), "metadata: " + s.message());
  rep.grown_from = h.data_size < geo_.data_size ? h.data_size : 0;
  auto body = std::as_bytes(std::span(slots[best].body.data(), slots[best].body.size()));
  auto model = decode_checkpoint_body(body, h.next_ino);
  if (!model) return model.status();
  model_ = std::move(*model);
  slots[0].body = std::string();
  slots[1].body = std::string();
  rep.decode_ms = ms_since(t);
  t = MountClock::now();
  ckpt_seq_ = h.seq;
  rep.checkpoint_seq = h.seq;
  JournalPosition start{h.journal_tail, h.journal_tail, h.next_lsn, h.journal_salt};
  if (opt_.skip_replay) {
    // norecovery: the batches are read and counted (so the log can say
    // what is not shown), never applied.
    auto skipped = replay_journal(io_, layout_, start, [](const Txn&) { return 0; });
    if (!skipped) return skipped.status();
    rep.skipped_batches = skipped->batches;
    rep.journal_stop = skipped->stop_reason;
  } else {
    Model& m = model_;
    auto replay = replay_journal(io_, layout_, start,
                                 [&m](const Txn& txn) NO_THREAD_SAFETY_ANALYSIS { return m.apply(txn, nullptr); });
    if (!replay) return replay.status();
    rep.replayed_batches = replay->batches;
    rep.replayed_records = replay->records;
    rep.journal_stop = replay->stop_reason;
    start = replay->end;
    start.tail = h.journal_tail;
  }
  rep.replay_ms = ms_since(t);
  return start;
}

Status Metadata::rebuild_allocator() NO_THREAD_SAFETY_ANALYSIS {
  alloc_ = std::make_unique<Allocator>(geo_.data_offset, geo_.data_size, geo_.stripe_width(), opt_.alloc_window,
                                       geo_.stripe_unit);
  for (const auto& [ino, in] : model_.inodes) {
    for (const auto& [off, e] : in->extents.extents()) {
      if (!alloc_->mark_used(e.vol_off, e.len))
        return Status::error(EUCLEAN, "metadata: extent of inode " + std::to_string(ino) + " at volume offset " +
                                          std::to_string(e.vol_off) +
                                          " overlaps another extent or leaves the data area; run fsck");
    }
  }
  return Status::ok();
}

void Metadata::open_journal(JournalPosition start) {
  journal_ = std::make_unique<Journal>(io_, layout_, start, opt_.checkpoint_percent, opt_.pending_commit_bytes);
  if (opt_.plant_journal_without_data_flush) journal_->plant_missing_data_flush();
  journal_->set_checkpoint_fn([this] { return do_checkpoint(); });
  journal_->set_durable_hook([this](uint64_t lsn) { alloc_->release_durable(lsn); });
  journal_->set_failure_hook([this](int err, bool checkpoint) {
    if (opt_.on_read_only) opt_.on_read_only(err, checkpoint ? "checkpoint" : "journal batch");
  });
}

void Metadata::free_orphans() {
  WriterLock lk(ns_mu_);
  std::vector<Ino> orphans(model_.orphans.begin(), model_.orphans.end());
  for (Ino o : orphans) {
    Delta d;
    d.type = DeltaType::kInodeDel;
    d.ino = o;
    if (commit_txn(Txn{d}) == 0) ++report_.orphans_freed;
  }
}

Status Metadata::unmount() {
  journal_->stop_background();
  if (opt_.read_only) return Status::ok();  // nothing was changed, nothing to write
  if (int rc = journal_->checkpoint(); rc != 0) {
    if (discarder_) discarder_->stop();
    return Status::error(-rc, "metadata: checkpoint at unmount failed: " + last_error());
  }
  // The checkpoint made every free durable: with -o discard, discard them
  // all before the daemon goes, as ext4 does at unmount.
  if (discarder_) discarder_->stop(/*drain=*/true);
  if (int rc = io_.flush(); rc != 0) return Status::error(-rc, "metadata: flush at unmount failed");
  return Status::ok();
}

int Metadata::trim(uint64_t start, uint64_t len, uint64_t minlen, uint64_t* trimmed) {
  *trimmed = 0;
  if (opt_.read_only || !discarder_) return -EROFS;
  if (write_failed()) return -EROFS;
  const uint64_t size = data_size() / kBlockSize * kBlockSize;
  // As ext4: a range that starts past the end, is shorter than a block or
  // asks for extents larger than the volume is refused.
  if (start >= size || len < kBlockSize || minlen > size) return -EINVAL;
  // Whole blocks only: the free map deals in nothing smaller.
  const uint64_t end = (len > size - start ? size : start + len) / kBlockSize * kBlockSize;
  start = (start + kBlockSize - 1) / kBlockSize * kBlockSize;
  if (start >= end) return 0;
  return discarder_->trim(geo_.data_offset + start, geo_.data_offset + end, minlen, trimmed);
}

int Metadata::grow_data_area(uint64_t data_size) {
  if (opt_.read_only || write_failed()) return -EROFS;
  if (data_size < this->data_size() || geo_.data_offset + data_size > io_.size()) return -EINVAL;
  // Recorded first: a checkpoint taken meanwhile may say the new size with
  // no extent there yet, never an extent past the size it says.
  data_size_.store(data_size, std::memory_order_release);
  alloc_->grow(data_size);
  return 0;
}

DiscardStats Metadata::discard_stats() const {
  if (!discarder_) return DiscardStats{};
  return discarder_->stats();
}

std::string Metadata::last_error() const {
  MutexLock lk(err_mu_);
  return last_error_;
}

int Metadata::commit_txn(Txn&& txn, bool data_first) {
  if (opt_.read_only) return -EROFS;
  if (int err = journal_->error(); err != 0) return -EROFS;  // read-only since a metadata write failed
  std::vector<VolRange> freed;
  if (int rc = model_.apply(txn, &freed); rc != 0) return -EIO;  // a bug: the op built a bad txn
  const uint64_t lsn = journal_->append(txn, data_first);
  for (const Delta& d : txn) {
    if (Inode* in = model_.find(d.ino)) {
      in->last_lsn = lsn;
      if (d.type == DeltaType::kInodePut) {
        in->times_unlogged = false;
        in->attr_logged_at = d.attr.ctime_ns;  // ~now, without another clock call
      }
    }
    if (d.type == DeltaType::kDirentPut) {
      if (Inode* c = model_.find(d.child)) c->last_lsn = lsn;
    }
    if (d.type == DeltaType::kInodeDel) alloc_->drop_reservation(d.ino);
  }
  for (const VolRange& r : freed) {
    alloc_->free_deferred(lsn, r);
    if (opt_.plant_discard_before_free_durable) io_.discard(r.off, r.len);  // the planted bug
  }
  return 0;
}

int Metadata::do_checkpoint() {
  CheckpointHeader h;
  JournalPosition covered;
  std::string body;
  {
    ReaderLock lk(ns_mu_);
    covered = journal_->take_for_checkpoint();
    body = encode_checkpoint_body(model_);
    h.next_lsn = covered.next_lsn;
    h.journal_tail = covered.head;
    h.next_ino = model_.next_ino;
    h.inode_count = model_.inodes.size();
  }
  if (int rc = journal_->run_before_persist(); rc != 0) return rc;
  if (int rc = journal_->error(); rc != 0) return rc;  // stopped meanwhile (Journal::stop)
  h.seq = ckpt_seq_ + 1;
  h.journal_salt = covered.salt = std::random_device{}();
  h.data_offset = geo_.data_offset;
  h.data_size = data_size();
  Status st = write_checkpoint(io_, layout_, h, body);
  if (!st) {
    MutexLock lk(err_mu_);
    last_error_ = st.message();
    return -st.errnum();
  }
  ckpt_seq_ = h.seq;
  journal_->checkpoint_done(covered);
  return 0;
}

void Metadata::set_before_persist(std::function<int()> fn) { journal_->set_before_persist(std::move(fn)); }

MetaSpace Metadata::space() const {
  ReaderLock lk(ns_mu_);
  return space_locked();
}

int Metadata::log_deferred_times(Inode* in) {
  if (!in->times_unlogged) return 0;
  TxnBuilder b;
  b.attr(in);  // the inode as it is now, timestamps included
  return commit_txn(b.finish());
}

int Metadata::log_all_deferred_times() {
  for (Ino ino : times_unlogged_) {
    if (Inode* in = model_.find(ino)) {
      if (int rc = log_deferred_times(in); rc != 0) return rc;
    }
  }
  times_unlogged_.clear();
  times_unlogged_compact_at_ = 4096;
  return 0;
}

int Metadata::fsync(Ino ino, bool data_only) {
  if (opt_.read_only) return 0;     // nothing can be pending
  if (write_failed()) return -EIO;  // what was not durable when the journal failed never will be
  uint64_t lsn;
  bool deferred;
  {
    ReaderLock lk(ns_mu_);
    const Inode* in = model_.find(ino);
    lsn = in ? in->last_lsn : journal_->last_lsn();
    deferred = !data_only && in != nullptr && in->times_unlogged;
  }
  if (deferred) {
    WriterLock lk(ns_mu_);
    Inode* in = model_.find(ino);
    if (in != nullptr) {
      if (int rc = log_deferred_times(in); rc != 0) return rc;
      lsn = in->last_lsn;
    }
  }
  return journal_->commit(lsn) == 0 ? 0 : -EIO;
}

bool Metadata::fsync_commit_is_short() const {
  // A batch of this much is one write of a few blocks.
  constexpr uint64_t kShortBatchBytes = 64 << 10;
  return !opt_.read_only && journal_->commit_is_short(kShortBatchBytes);
}

int Metadata::sync() {
  if (opt_.read_only) return 0;
  if (write_failed()) return -EIO;
  {
    WriterLock lk(ns_mu_);
    if (int rc = log_all_deferred_times(); rc != 0) return rc;
  }
  return journal_->commit_all() == 0 ? 0 : -EIO;
}

int Metadata::checkpoint() {
  if (opt_.read_only) return -EROFS;
  const int rc = journal_->checkpoint();
  return rc == 0 ? 0 : (rc == -ENOSPC ? -ENOSPC : -EIO);
}

std::string Metadata::dump() const {
  ReaderLock lk(ns_mu_);
  return model_.dump();
}

InodeAttr Metadata::attr_of(const Inode& in) const {
  InodeAttr a = in.attr;
  a.blocks = in.extents.allocated_bytes() / 512;
  return a;
}

}  // namespace peregrine::meta
