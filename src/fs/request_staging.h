// Batching IO across FUSE requests (fuse.batch_requests, docs/design.md
// section 2.5): the worker's reads and writes leave their sub-IOs staged while the
// volume is busy, and the request reader (request_reader.h) hands them on
// before the worker could sleep. Internal to src/fs.
//
// Thread rules: everything here acts on the calling FUSE worker's own
// state (its Submitter and its RequestReader).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fs_context.h"

namespace peregrine::fs {

// Whether these settings batch across requests: asked for, and the
// per-drive scheduler (the per-volume baseline keeps one unplug per request).
inline bool batches_requests(const config::Settings& s) {
  return s.fuse.batch_requests && s.engine.scheduler == config::Scheduler::kPerDrive;
}

// Reads one request from a worker's /dev/fuse descriptor through the
// worker's RequestReader (the transport's read hook, when batching). Says
// whether a read or write read so may leave its IO staged when it ends
// (RequestMarks::may_stay_staged).
ssize_t read_request_batched(FsContext& fs, int fd, void* buf, size_t len, bool* may_stay_staged);

// Ends a read's or write's staging on the calling worker: hands its batch
// on, unless the request may leave it staged (its marks say the thread
// hands it on before it can sleep), these settings batch across requests,
// and the volume has at least the low watermark outstanding, so that more
// requests are likely waiting to join the batch.
void end_request_staging(FsContext& fs, Submitter& sub, bool may_stay_staged);

// For a request that ends without staging anything: hands on what
// earlier requests on its thread (`thread`: ReadCall::thread) staged, so
// that a run of such requests cannot hold it.
inline void hand_on_staged(FsContext& fs, HostThread* thread) { fs.hand_on_staged(thread); }

// One read's or write's staging on its thread, from its start to its
// return. The path that stages the request's own IO ends it (end() or
// hand_on_now()); every other path, an error, an answer from memory or a
// request with nothing to read, hands on at the scope's exit what earlier
// requests on the thread staged (hand_on_staged), after its reply.
class RequestStagingScope {
 public:
  RequestStagingScope(FsContext& fs, HostThread* thread) : fs_(fs), thread_(thread) {}
  ~RequestStagingScope() {
    if (!ended_) hand_on_staged(fs_, thread_);
  }
  RequestStagingScope(const RequestStagingScope&) = delete;
  RequestStagingScope& operator=(const RequestStagingScope&) = delete;

  // The request's IO is staged on `sub`: end_request_staging decides
  // whether the batch waits for the next request.
  void end(Submitter& sub, bool may_stay_staged) {
    ended_ = true;
    end_request_staging(fs_, sub, may_stay_staged);
  }
  // The request's IO goes now (an answered write's): to the drive threads
  // if they may hold it for its neighbours (or moved here on a memory
  // member), else as a waited-for request's would.
  void hand_on_now(Submitter& sub, bool may_hold) {
    ended_ = true;
    sub.unplug(may_hold ? Submitter::Completions::unawaited_here : Submitter::Completions::here);
  }
  // Hands on what earlier requests staged now, before a reply that may
  // wait for the kernel (a store into its page cache, which may wait for
  // pages whose reads sit in this batch).
  void hand_on_before_reply() {
    ended_ = true;
    hand_on_staged(fs_, thread_);
  }
  // The request leaves this thread unserved (a ring's try that declined,
  // having done nothing): the batch stays as it was.
  void leave_as_it_was() { ended_ = true; }

 private:
  FsContext& fs_;
  HostThread* thread_;
  bool ended_ = false;
};

}  // namespace peregrine::fs
