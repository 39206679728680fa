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

// Makes libfuse read requests through read_request() for this session.
// Call after fuse_session_mount(); returns libfuse's result (0 on success).
int install_request_batching(fuse_session* se);

// Ends a read's or write's staging on the calling worker: hands its batch
// on, unless the request came through the batching reader and the volume
// has at least the low watermark outstanding, so that more requests are
// likely waiting to join the batch.
void end_request_staging(FsContext& fs, Submitter& sub);

}  // namespace peregrine::fs
