// The metadata journal: a ring of checksummed, sequence-numbered batches of
// records in the metadata area, with group commit.
//
// Every operation appends one record (an encoded Txn) to an in-memory
// pending buffer and gets a journal sequence number (lsn). commit(lsn)
// makes everything up to lsn durable: the first waiting thread becomes the
// commit leader, takes ALL pending records (other threads' too) and writes
// them as one batch: flush (only when the batch marks extents written, so
// the data writes completed before those records are durable first), write
// batch, flush. Threads that
// arrive meanwhile wait on a condition variable and are usually covered by
// the next batch: many fsyncs share one journal write.
//
// Positions are logical byte offsets that only grow; the physical offset is
// logical % ring size. A batch never straddles the ring end (the rest of the
// ring is skipped). When the ring would fill past checkpoint_percent, the
// leader writes a checkpoint instead of the batch (the checkpoint covers the
// pending records), which moves the replay start (tail) up to the head.
//
// Thread rules: append() takes the journal mutex briefly and never blocks
// on IO; callers hold Metadata's namespace lock exclusively while appending,
// so lsn order equals apply order. commit() must be called WITHOUT the
// namespace lock: the leader may call the checkpoint function, which takes
// the namespace lock shared. Lock order: namespace -> journal -> allocator.
// A background thread commits every commit_interval_ms and when pending
// records exceed pending_commit_bytes. The annotations
// (util/thread_annotations.h) state the journal mutex's part for the compiler.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "peregrine/meta/layout.h"
#include "peregrine/meta/records.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/result.h"
#include "peregrine/util/thread_annotations.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

inline constexpr uint32_t kBatchMagic = 0x424A4750;  // "PGJB"
inline constexpr uint16_t kBatchVersion = 1;
inline constexpr size_t kBatchHeaderBytes = 64;

struct JournalPosition {
  uint64_t head = 0;      // logical position of the next batch
  uint64_t tail = 0;      // logical replay start of the newest checkpoint
  uint64_t next_lsn = 1;  // sequence number of the next record
  // Seed of every batch checksum since the newest checkpoint. A fresh
  // random value per checkpoint, kept only in the metadata area, so bytes a
  // user stored (names, xattr values) that land in the ring after a torn
  // batch can never pass for a batch.
  uint32_t salt = 0;
};

struct BatchHeader {
  uint64_t logical_pos = 0;
  uint64_t first_lsn = 0;
  uint32_t record_count = 0;
  uint32_t payload_len = 0;
  uint64_t batch_len = 0;  // header + payload rounded up to 4096
  uint32_t payload_crc = 0;
};

// Encodes a whole batch (header + payload, zero padded to 4 KiB).
std::string encode_batch(uint64_t logical_pos, uint64_t first_lsn, uint32_t count, const std::string& payload,
                         uint32_t salt = 0);
// Checks the header in the first 64 bytes (magic, version, header crc).
bool decode_batch_header(std::span<const std::byte> bytes, BatchHeader* h, uint32_t salt = 0);
// Checks a whole batch (header, payload crc) and decodes its records.
bool decode_batch(std::span<const std::byte> bytes, BatchHeader* h, std::vector<Txn>* txns, uint32_t salt = 0);

struct ReplayResult {
  JournalPosition end;  // where the next batch goes
  uint64_t batches = 0;
  uint64_t records = 0;
  std::string stop_reason;  // why replay stopped: kJournalEnd, or a torn or stale batch
};
// The stop_reason of a replay that found no further batch header: the
// routine end of the journal, not damage.
inline constexpr const char* kJournalEnd = "no valid batch header";
// Replays batches from `start` (tail, next_lsn) in order, calling apply on
// every record, until the first batch that is missing, torn or out of
// sequence. An apply error or an undecodable batch whose checksum is valid
// is an error (EUCLEAN).
Expected<ReplayResult> replay_journal(VolumeIo& io, const MetaLayout& l, JournalPosition start,
                                      const std::function<int(const Txn&)>& apply);

class Journal {
 public:
  using CheckpointFn = std::function<int()>;

  Journal(VolumeIo& io, const MetaLayout& l, JournalPosition start, uint32_t checkpoint_percent,
          uint64_t pending_commit_bytes);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Set once before use. The checkpoint function runs on the commit leader:
  // it takes the namespace lock shared, calls take_for_checkpoint(),
  // serialises the model, releases the lock, writes the checkpoint and
  // calls checkpoint_done(). Returns 0 or -errno.
  void set_checkpoint_fn(CheckpointFn fn) { checkpoint_fn_ = std::move(fn); }
  // Tests of the power-cut harness only (Options::plant_journal_without_data_flush).
  // Set once before use.
  void plant_missing_data_flush() { plant_missing_data_flush_ = true; }
  // Called (under the journal mutex) whenever the durable lsn advances.
  void set_durable_hook(std::function<void(uint64_t)> fn) { durable_hook_ = std::move(fn); }
  // Called once, without the journal mutex, when a batch or checkpoint
  // write fails and the journal stops accepting commits.
  void set_failure_hook(std::function<void(int err, bool checkpoint)> fn) { failure_hook_ = std::move(fn); }
  // Metadata::set_before_persist: run_before_persist() calls it on the
  // commit leader, without the journal mutex, after a batch's records were
  // taken and before they are written (and from the checkpoint function);
  // an error fails the commit as a write error would. Any time, any thread.
  void set_before_persist(std::function<int()> fn) EXCLUDES(mu_);
  int run_before_persist() EXCLUDES(mu_);
  void start_background(uint32_t interval_ms);
  void stop_background();

  // data_first: the record counts on bytes of data writes that completed
  // before it (a size grown by a write; one grown by truncate or fallocate
  // over a tail a shrink zeroed in place), which the batch flushes to the
  // media before it is written.
  uint64_t append(const Txn& txn, bool data_first = false);
  // Blocks until lsn <= target is durable. 0, or -errno once the journal has
  // failed (every later commit fails too: the volume needs a remount).
  int commit(uint64_t target);
  int commit_all() { return commit(last_lsn()); }
  // Stops the journal as a failed write does, for a reason outside it:
  // every commit from now on fails with `err` (-errno). The failure hook
  // is not called: the caller says why. Any thread.
  void stop(int err) EXCLUDES(mu_);
  // Whether a commit now would be one batch of at most `max_bytes` of
  // records, with no other commit under way and no checkpoint due: what
  // a caller that must not wait long asks before it commits. A snapshot.
  bool commit_is_short(uint64_t max_bytes) const;
  // Commits everything and writes a checkpoint.
  int checkpoint();

  // For the checkpoint function (commit leader only). checkpoint_done:
  // replay now starts at covered.head, batches use covered.salt.
  JournalPosition take_for_checkpoint();
  void checkpoint_done(const JournalPosition& covered);

  uint64_t last_lsn() const;
  uint64_t durable_lsn() const;
  int error() const;
  JournalPosition position() const;
  // Bytes of records appended and not yet written to the ring (including
  // a batch being written right now).
  uint64_t pending_bytes() const;
  uint64_t batches_written() const;

 private:
  int commit_impl(uint64_t target, bool force_checkpoint) EXCLUDES(mu_);
  // Where the next batch, of `payload_bytes` of `count` records, would be
  // written (journal offset and length), and whether the commit would
  // write a checkpoint instead (the ring fuller than checkpoint_percent_).
  struct BatchPlace {
    uint64_t at = 0;
    uint64_t bytes = 0;
    bool checkpoint = false;
  };
  BatchPlace place_batch(uint64_t payload_bytes, uint32_t count) const REQUIRES(mu_);
  int write_batch(uint64_t pos, uint64_t first_lsn, uint32_t count, const std::string& payload, uint32_t salt,
                  bool data_first) EXCLUDES(mu_);
  void background_loop(uint32_t interval_ms) EXCLUDES(mu_);

  VolumeIo& io_;
  const MetaLayout layout_;
  const uint32_t checkpoint_percent_;
  const uint64_t pending_commit_bytes_;
  CheckpointFn checkpoint_fn_;
  std::function<void(uint64_t)> durable_hook_;
  std::function<void(int, bool)> failure_hook_;
  std::function<int()> before_persist_ GUARDED_BY(mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;     // commit finished
  std::condition_variable bg_cv_;  // work for the background committer
  std::string pending_ GUARDED_BY(mu_);
  uint64_t in_write_bytes_ GUARDED_BY(mu_) = 0;  // of the batch being written (not yet in head)
  uint32_t pending_count_ GUARDED_BY(mu_) = 0;
  bool pending_data_ GUARDED_BY(mu_) = false;  // pending records mark data written
  bool plant_missing_data_flush_ = false;       // fixed before use
  uint64_t pending_first_lsn_ GUARDED_BY(mu_) = 1;
  JournalPosition pos_ GUARDED_BY(mu_);
  uint64_t durable_lsn_ GUARDED_BY(mu_) = 0;
  bool committing_ GUARDED_BY(mu_) = false;  // a commit leader is at work
  int failed_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  uint64_t batches_ GUARDED_BY(mu_) = 0;
  std::thread bg_;
};

}  // namespace peregrine::meta
