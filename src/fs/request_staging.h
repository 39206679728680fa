// Batching IO across FUSE requests (fuse.batch_requests, DESIGN.md section
// 2): the worker's reads and writes leave their sub-IOs staged while the
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

// Makes libfuse read this session's requests through a RequestReader.
// Call after fuse_session_mount(); returns libfuse's result (0 on success,
// else a negative errno).
int install_request_batching(fuse_session* se, FsContext& fs);

// Ends a read's or write's staging on the calling worker: hands its batch
// on, unless the request came through the batching reader and the volume
// has at least the low watermark outstanding, so that more requests are
// likely waiting to join the batch.
void end_request_staging(FsContext& fs, Submitter& sub);

// For a read or write that ends without staging anything: hands on what
// earlier requests staged, so that a run of such requests cannot hold it.
inline void hand_on_staged(FsContext& fs) { fs.pool.unplug_this_thread(); }

}  // namespace peregrine::fs
