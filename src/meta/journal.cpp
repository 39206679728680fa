// Journal: batch encoding, replay, and the group-commit ring writer.
#include "peregrine/meta/journal.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include "codec.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/crc32c.h"
#include "peregrine/util/round.h"

namespace peregrine::meta {

std::string encode_batch(uint64_t logical_pos, uint64_t first_lsn, uint32_t count, const std::string& payload,
                         uint32_t salt) {
  const uint64_t total = round_up(kBatchHeaderBytes + payload.size(), kBlockSize);
  std::string s;
  s.reserve(total);
  codec::Writer w(&s);
  w.u32(kBatchMagic);
  w.u16(kBatchVersion);
  w.u16(0);
  w.u32(0);  // header crc, patched
  w.u32(crc32c(payload.data(), payload.size(), salt));
  w.u64(logical_pos);
  w.u64(first_lsn);
  w.u32(count);
  w.u32(static_cast<uint32_t>(payload.size()));
  w.u64(total);
  s.resize(kBatchHeaderBytes, '\0');
  const uint32_t hcrc = crc32c(s.data(), kBatchHeaderBytes, salt);
  codec::put_le32(reinterpret_cast<std::byte*>(s.data() + 8), hcrc);
  s += payload;
  s.resize(total, '\0');
  return s;
}

bool decode_batch_header(std::span<const std::byte> bytes, BatchHeader* h, uint32_t salt) {
  if (bytes.size() < kBatchHeaderBytes) return false;
  std::byte tmp[kBatchHeaderBytes];
  std::memcpy(tmp, bytes.data(), kBatchHeaderBytes);
  const uint32_t stored = codec::get_le32(tmp + 8);
  codec::put_le32(tmp + 8, 0);
  if (crc32c(tmp, kBatchHeaderBytes, salt) != stored) return false;
  codec::Reader r(std::span<const std::byte>(tmp, kBatchHeaderBytes));
  if (r.u32() != kBatchMagic || r.u16() != kBatchVersion) return false;
  r.u16();
  r.u32();
  h->payload_crc = r.u32();
  h->logical_pos = r.u64();
  h->first_lsn = r.u64();
  h->record_count = r.u32();
  h->payload_len = r.u32();
  h->batch_len = r.u64();
  return r.ok() && h->logical_pos % kBlockSize == 0 &&
         h->batch_len == round_up(kBatchHeaderBytes + uint64_t{h->payload_len}, kBlockSize);
}

bool decode_batch(std::span<const std::byte> bytes, BatchHeader* h, std::vector<Txn>* txns, uint32_t salt) {
  if (!decode_batch_header(bytes, h, salt)) return false;
  if (bytes.size() < kBatchHeaderBytes + uint64_t{h->payload_len}) return false;
  auto payload = bytes.subspan(kBatchHeaderBytes, h->payload_len);
  if (crc32c(payload, salt) != h->payload_crc) return false;
  if (h->record_count > h->payload_len / 8) return false;
  txns->clear();
  size_t pos = 0;
  for (uint32_t i = 0; i < h->record_count; ++i) {
    Txn t;
    if (!decode_txn(payload, &pos, &t)) return false;
    txns->push_back(std::move(t));
  }
  return pos == payload.size();
}

Expected<ReplayResult> replay_journal(VolumeIo& io, const MetaLayout& l, JournalPosition start,
                                      const std::function<int(const Txn&)>& apply) {
  ReplayResult res;
  res.end = start;
  const uint64_t ring = l.journal_size;
  AlignedBuffer first(kBlockSize);
  // Reads the batch whose header sits at logical `pos`; true when it is a
  // complete, valid batch for this position and the expected lsn.
  auto try_read = [&](uint64_t pos, AlignedBuffer* out, BatchHeader* h, std::vector<Txn>* txns,
                      std::string* why) -> bool {
    const uint64_t phys = pos % ring;
    if (io.read(l.journal_off + phys, first.span()) != 0) {
      *why = "read error";
      return false;
    }
    if (!decode_batch_header(first.span(), h, start.salt)) {
      *why = kJournalEnd;
      return false;
    }
    if (h->logical_pos != pos || h->first_lsn != res.end.next_lsn) {
      *why = "stale batch (position or sequence does not follow)";
      return false;
    }
    if (phys + h->batch_len > ring || pos + h->batch_len - start.tail > ring) {
      *why = "batch length out of range";
      return false;
    }
    *out = AlignedBuffer(h->batch_len);
    if (io.read(l.journal_off + phys, out->span()) != 0) {
      *why = "read error";
      return false;
    }
    if (!decode_batch_header(out->span(), h, start.salt) ||
        crc32c(out->span().subspan(kBatchHeaderBytes, h->payload_len), start.salt) != h->payload_crc) {
      *why = "torn batch (payload checksum)";
      return false;
    }
    if (!decode_batch(out->span(), h, txns, start.salt)) {
      *why = "undecodable";
      return false;
    }
    return true;
  };
  for (;;) {
    AlignedBuffer buf;
    BatchHeader h;
    std::vector<Txn> txns;
    std::string why;
    uint64_t pos = res.end.head;
    bool ok = try_read(pos, &buf, &h, &txns, &why);
    if (!ok && why == "undecodable")
      return Status::error(EUCLEAN,
                           "journal batch at " + std::to_string(pos) + " has a valid checksum but bad records");
    if (!ok && pos % ring != 0) {
      // The writer skips the end of the ring when a batch does not fit.
      std::string why2;
      const uint64_t wrapped = round_up(pos, ring);
      if (wrapped - start.tail < ring && try_read(wrapped, &buf, &h, &txns, &why2)) {
        ok = true;
        pos = wrapped;
      } else if (why2 == "undecodable") {
        return Status::error(EUCLEAN, "journal batch at " + std::to_string(wrapped) + " has bad records");
      }
    }
    if (!ok) {
      res.stop_reason = why;
      break;
    }
    for (const Txn& t : txns) {
      if (int rc = apply(t); rc != 0)
        return Status::error(-rc, "journal record " + std::to_string(res.end.next_lsn) + " does not apply");
      ++res.end.next_lsn;
      ++res.records;
    }
    ++res.batches;
    res.end.head = pos + h.batch_len;
  }
  return res;
}

Journal::Journal(VolumeIo& io, const MetaLayout& l, JournalPosition start, uint32_t checkpoint_percent,
                 uint64_t pending_commit_bytes)
    : io_(io),
      layout_(l),
      checkpoint_percent_(checkpoint_percent ? checkpoint_percent : 50),
      pending_commit_bytes_(pending_commit_bytes),
      pending_first_lsn_(start.next_lsn),
      pos_(start),
      durable_lsn_(start.next_lsn - 1) {}

Journal::~Journal() { stop_background(); }

void Journal::start_background(uint32_t interval_ms) {
  bg_ = std::thread([this, interval_ms] { background_loop(interval_ms); });
}

void Journal::stop_background() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_.joinable()) bg_.join();
}

void Journal::background_loop(uint32_t interval_ms) {
  MutexLock lk(mu_);
  while (!stop_) {
    auto want = [this] {
      mu_.assert_held();  // a wait predicate: runs under lk
      // Not once failed: nothing commits the pending records any more.
      return stop_ || (pending_.size() >= pending_commit_bytes_ && !committing_ && failed_ == 0);
    };
    if (interval_ms) {
      lk.wait_for(bg_cv_, std::chrono::milliseconds(interval_ms), want);
    } else {
      lk.wait(bg_cv_, want);
    }
    if (stop_) break;
    if (pending_count_ == 0 || failed_) continue;
    const uint64_t target = pos_.next_lsn - 1;
    lk.unlock();
    commit(target);
    lk.lock();
  }
}

void Journal::set_before_persist(std::function<int()> fn) {
  MutexLock lk(mu_);
  before_persist_ = std::move(fn);
}

int Journal::run_before_persist() {
  std::function<int()> hook;
  {
    MutexLock lk(mu_);
    hook = before_persist_;
  }
  return hook ? hook() : 0;
}

uint64_t Journal::append(const Txn& txn, bool data_first) {
  MutexLock lk(mu_);
  encode_txn(txn, &pending_);
  ++pending_count_;
  if (data_first) pending_data_ = true;
  for (const Delta& d : txn) {
    if (d.type == DeltaType::kExtentWritten || (d.type == DeltaType::kExtentMap && d.written)) pending_data_ = true;
  }
  const uint64_t lsn = pos_.next_lsn++;
  if (pending_.size() >= pending_commit_bytes_) bg_cv_.notify_one();
  return lsn;
}

int Journal::commit(uint64_t target) { return commit_impl(target, false); }

bool Journal::commit_is_short(uint64_t max_bytes) const {
  MutexLock lk(mu_);
  if (failed_ != 0 || committing_ || pending_.size() > max_bytes) return false;
  return !place_batch(pending_.size(), pending_count_).checkpoint;
}

Journal::BatchPlace Journal::place_batch(uint64_t payload_bytes, uint32_t count) const {
  const uint64_t ring = layout_.journal_size;
  BatchPlace p;
  p.bytes = round_up(kBatchHeaderBytes + payload_bytes, kBlockSize);
  p.at = pos_.head;
  if (p.at % ring + p.bytes > ring) p.at = round_up(p.at + 1, ring);  // a batch never wraps
  p.checkpoint = count > 0 && (p.at + p.bytes - pos_.tail) * 100 > ring * checkpoint_percent_;
  return p;
}
int Journal::checkpoint() { return commit_impl(last_lsn(), true); }

int Journal::commit_impl(uint64_t target, bool force_checkpoint) {
  MutexLock lk(mu_);
  for (;;) {
    if (failed_) return failed_;
    if (durable_lsn_ >= target && !force_checkpoint) return 0;
    if (committing_) {
      lk.wait(cv_);
      continue;
    }
    committing_ = true;
    in_write_bytes_ = pending_.size();
    std::string payload = std::move(pending_);
    pending_.clear();
    const uint32_t count = pending_count_;
    const bool data = pending_data_;
    pending_data_ = false;
    const uint64_t first = pending_first_lsn_;
    const uint64_t last = pos_.next_lsn - 1;
    pending_count_ = 0;
    pending_first_lsn_ = pos_.next_lsn;
    const BatchPlace place = place_batch(payload.size(), count);
    const uint64_t at = place.at;
    const uint64_t blen = place.bytes;
    const bool ckpt = force_checkpoint || place.checkpoint;
    // Only the leader changes the salt (checkpoint_done): read under the lock.
    const uint32_t salt = pos_.salt;
    lk.unlock();
    int rc = 0;
    if (ckpt) {
      rc = checkpoint_fn_ ? checkpoint_fn_() : -EINVAL;
    } else if (count > 0) {
      rc = run_before_persist();
      // stop() may have come while that waited (a tail block parked on a
      // restripe window): then no record is written after it.
      if (rc == 0) rc = error();
      if (rc == 0) rc = write_batch(at, first, count, payload, salt, data);
    }
    lk.lock();
    committing_ = false;
    in_write_bytes_ = 0;
    force_checkpoint = false;
    const bool first_failure = rc != 0 && failed_ == 0;
    if (rc != 0) {
      failed_ = rc;
    } else if (!ckpt) {
      if (count > 0) {
        pos_.head = at + blen;
        ++batches_;
      }
      durable_lsn_ = std::max(durable_lsn_, last);
    }
    if (durable_hook_) durable_hook_(durable_lsn_);
    cv_.notify_all();
    if (rc != 0) {
      lk.unlock();
      if (first_failure && failure_hook_) failure_hook_(rc, ckpt);
      return rc;
    }
  }
}

int Journal::write_batch(uint64_t pos, uint64_t first_lsn, uint32_t count, const std::string& payload, uint32_t salt,
                         bool data_first) {
  const std::string bytes = encode_batch(pos, first_lsn, count, payload, salt);
  AlignedBuffer buf(bytes.size());
  std::memcpy(buf.data(), bytes.data(), bytes.size());
  // Data writes that completed before their records were appended must be
  // durable before the records that mark them written.
  if (data_first && !plant_missing_data_flush_) {
    if (int rc = io_.flush(); rc != 0) return rc;
  }
  if (int rc = io_.write(layout_.journal_off + pos % layout_.journal_size, buf.span()); rc != 0) return rc;
  return io_.flush();
}

JournalPosition Journal::take_for_checkpoint() {
  MutexLock lk(mu_);
  pending_.clear();
  pending_count_ = 0;
  pending_data_ = false;
  pending_first_lsn_ = pos_.next_lsn;
  return pos_;
}

void Journal::checkpoint_done(const JournalPosition& covered) {
  MutexLock lk(mu_);
  pos_.tail = covered.head;
  pos_.salt = covered.salt;
  durable_lsn_ = std::max(durable_lsn_, covered.next_lsn - 1);
}

uint64_t Journal::last_lsn() const {
  MutexLock lk(mu_);
  return pos_.next_lsn - 1;
}
uint64_t Journal::durable_lsn() const {
  MutexLock lk(mu_);
  return durable_lsn_;
}
void Journal::stop(int err) {
  MutexLock lk(mu_);
  if (failed_ == 0) failed_ = err;
  cv_.notify_all();  // a commit waiting for the leader's batch fails now
}

int Journal::error() const {
  MutexLock lk(mu_);
  return failed_;
}
uint64_t Journal::pending_bytes() const {
  MutexLock lk(mu_);
  return pending_.size() + in_write_bytes_;
}

JournalPosition Journal::position() const {
  MutexLock lk(mu_);
  return pos_;
}
uint64_t Journal::batches_written() const {
  MutexLock lk(mu_);
  return batches_;
}

}  // namespace peregrine::meta
