// EngineVolumeIo: the metadata layer's blocking VolumeIo, served by the
// per-drive engine. Each call borrows a Submitter, submits one request and
// waits for its completion (on a drive thread) with an atomic wait, or
// moves a lone piece itself (read, write, flush).
// Discards do not go through the engine (it has no such operation): the
// calling thread cuts the range into one span per member (StripeMap::
// member_spans) and discards each on the member file itself, counting per
// member what it discarded.
//
// Thread rules: thread-safe (see VolumeIo). Must be destroyed before the
// SubmitterPool, the Engine and the members it uses.
#pragma once

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/fs/submitter_pool.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::fs {

// What one member was told to discard since mount.
struct DiscardCounts {
  uint64_t discards = 0;  // discard calls (one span each)
  uint64_t bytes = 0;     // bytes of the spans that succeeded
  uint64_t errors = 0;    // calls that failed (not counting EOPNOTSUPP)
};

class EngineVolumeIo final : public VolumeIo {
 public:
  // `members` (index order, outliving this) serve discard(); none: every
  // discard is -EOPNOTSUPP.
  explicit EngineVolumeIo(SubmitterPool& pool, std::vector<MemberFile>* members = nullptr);

  uint64_t size() const override { return pool_.engine().map().volume_size(); }
  // A range one stripe unit holds is moved by the calling thread on its
  // member (Engine::transfer_lone_piece): the journal's commit write then
  // costs the member's write and no hand-off between threads. Others go
  // through the engine.
  int read(uint64_t offset, std::span<std::byte> out) override;
  int write(uint64_t offset, std::span<const std::byte> data) override;
  // The same, but IO that a member finishes within an inline dispatch
  // (memory-backed members copy inline) is reaped by the calling thread,
  // with no drive thread woken to hand it back: a read-modify-write of a
  // small append costs two IOs, and each hand-off costs two context
  // switches. Other finished IO of that drive completes here too, so only
  // for a caller that holds no lock an IO callback takes and waits for
  // nothing a callback must do (Submitter::Completions::here). *waited
  // (if given) is set when the IO was not finished inline and the caller
  // waited for a member or a drive thread.
  int read_here(uint64_t offset, std::span<std::byte> out, bool* waited = nullptr);
  int write_here(uint64_t offset, std::span<const std::byte> data, bool* waited = nullptr);
  // A lone drive that needs a flush is flushed by the calling thread
  // (Engine::flush_lone_drive); more go through the rings in parallel.
  int flush() override;
  // Discards on every member the range touches; the first error, or 0.
  int discard(uint64_t offset, uint64_t length) override;
  DiscardCounts discard_counts(uint32_t member) const;
  // Online replace, at the switch: member `index` becomes `other`, and
  // `other` gets the member that was. Waits for discards in progress.
  // Any thread.
  void swap_member(uint32_t index, MemberFile& other);
  // Online restripe. Before it starts: waits for discards in progress and
  // refuses the next ones (EOPNOTSUPP: a member span means nothing while
  // units have two places) until resume_discards(), once it is done or
  // has given up before it moved anything. `added` join the end of the
  // member list once it has started. Any thread.
  void stop_discards();
  void resume_discards();
  void add_members(std::vector<MemberFile>&& added);

 private:
  struct Counters {
    std::atomic<uint64_t> discards{0}, bytes{0}, errors{0};
  };
  int run_lone_or_through_engine(IoOp op, uint64_t offset, std::byte* buf, uint64_t len);
  int run(IoOp op, uint64_t offset, std::byte* buf, uint64_t len,
          Submitter::Completions where = Submitter::Completions::on_drive_thread, bool* waited = nullptr);
  SubmitterPool& pool_;
  std::vector<MemberFile>* members_;
  std::shared_mutex members_mu_;  // discard() shared, swap_member() exclusive
  bool discards_stopped_ = false;  // under members_mu_
  std::unique_ptr<Counters[]> counters_;  // kEngineMaxDrives: members a restripe adds too
};

}  // namespace peregrine::fs
