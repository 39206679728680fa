#include "request_staging.h"

#include <sys/uio.h>
#include <unistd.h>

#include "peregrine/fs/request_reader.h"

namespace peregrine::fs {
namespace {

class WorkerStaging final : public StagedIo {
 public:
  explicit WorkerStaging(SubmitterPool& pool) : pool_(pool) {}
  bool staged() override { return pool_.staged_on_this_thread(); }
  // Between requests: the worker holds no lock and waits for nothing.
  void unplug() override { pool_.unplug_this_thread(Submitter::Completions::here); }
  bool io_in_flight() override { return pool_.engine().outstanding() != 0; }

 private:
  SubmitterPool& pool_;
};

}  // namespace

ssize_t read_request_batched(FsContext& fs, int fd, void* buf, size_t len, bool* may_stay_staged) {
  *may_stay_staged = false;
  if (fd == fs.session_fd) {
    // Cloning failed and the workers share one descriptor, and with it one
    // blocking mode: no batching, libfuse's plain read.
    hand_on_staged(fs, nullptr);
    return ::read(fd, buf, len);
  }
  thread_local RequestReader reader;
  WorkerStaging staging(fs.pool);
  bool is_data = false;
  ssize_t n = reader.read(fd, buf, len, staging, &is_data,
                          fs.settings.fuse.one_reader && fs.read_turn.usable() ? &fs.read_turn : nullptr,
                          &fs.read_spin, &fs.lone_caller);
  *may_stay_staged = is_data;
  // A lone piece on a memory member is moved by this worker only while
  // requests queue: alone (QD 1) it goes to its drive, as moving it here
  // cost 18% of the 4 KiB reads on tmpfs members (Submitter::set_direct_pieces).
  if (Submitter* sub = fs.pool.for_this_thread(); sub != nullptr)
    sub->set_direct_pieces(is_data && reader.request_was_queued());
  return n;
}

namespace {

// A classic worker that served a lone request inline may wait for its
// member IO itself (engine.inline_poll_us) for as long as the setting
// says: the volume was quiet, so every other worker is in read() and takes
// the next request (a lone program's run of metadata requests, which has
// one reader, ends with the read that brings a read or write: the turn is
// let go of before the request is served).
bool worker_never_stops_polling(const void*) { return false; }

}  // namespace

ssize_t FsContext::read_request(int fd, void* buf, size_t len, bool* may_stay_staged) {
  if (Submitter* sub = pool.for_this_thread(); sub != nullptr && !sub->polls()) {
    sub->set_poll_stop(&worker_never_stops_polling, nullptr);
    sub->set_direct_pieces(false);
  }
  if (batches_requests(settings)) return read_request_batched(*this, fd, buf, len, may_stay_staged);
  *may_stay_staged = false;
  return ::read(fd, buf, len);
}

HostThread* FsContext::ring_thread_started(bool (*more_work)(const void*), const void* ring) {
  auto thread = std::make_unique<HostThread>();
  thread->submitter = pool.for_this_thread();
  if (thread->submitter != nullptr) thread->submitter->set_poll_stop(more_work, ring);
  MutexLock lock(ring_threads_mu_);
  ring_threads_.push_back(std::move(thread));
  return ring_threads_.back().get();
}

void end_request_staging(FsContext& fs, Submitter& sub, bool may_stay_staged) {
  // The per-volume baseline keeps one unplug per request (batches_requests).
  if (may_stay_staged && batches_requests(fs.settings)) {
    Engine& engine = fs.pool.engine();
    // The configured threshold, not the engine's: 0 per drive means
    // "always" here, where the engine must turn it into 1.
    if (engine.outstanding() >= fs.settings.engine.low_watermark(engine.drive_count())) return;
  }
  // The end of a read or write handler: no lock held, and the caller's own
  // request may complete here (its op stays valid: it holds a guard count).
  sub.unplug(Submitter::Completions::here);
}

}  // namespace peregrine::fs
