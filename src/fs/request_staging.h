// Batching IO across FUSE requests (fuse.batch_requests, docs/design.md
// section 2.5): the worker's reads and writes leave their sub-IOs staged while the
// volume is busy, and the request reader (request_reader.h) hands them on
// before the worker could sleep. Internal to src/fs.
//
// Thread rules: everything here acts on the calling FUSE worker's own
// state (its Submitter and a thread-local flag).
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
// worker's RequestReader (the transport's read hook, when batching). Marks
// a read or write as one whose IO may stay staged when it ends.
ssize_t read_request_batched(FsContext& fs, int fd, void* buf, size_t len);

// For a transport that runs requests on threads of its own (io_uring ring
// threads): whether the request about to run may leave its IO staged,
// because the thread hands the batch on itself before it can sleep.
void set_may_stay_staged(bool may);

// Ends a read's or write's staging on the calling worker: hands its batch
// on, unless the request came through the batching reader and the volume
// has at least the low watermark outstanding, so that more requests are
// likely waiting to join the batch.
void end_request_staging(FsContext& fs, Submitter& sub);

// For a read or write that ends without staging anything: hands on what
// earlier requests staged, so that a run of such requests cannot hold it.
inline void hand_on_staged(FsContext& fs) { fs.pool.unplug_this_thread(); }

}  // namespace peregrine::fs
