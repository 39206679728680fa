// Open flags that libfuse 3.14's fuse_file_info cannot carry
// (FOPEN_PARALLEL_DIRECT_WRITES): an operation sets them on its own thread
// right before fuse_reply_open() or fuse_reply_create(), and the transport's
// reply hook adds them to that reply's fuse_open_out and clears them.
//
// Thread rules: thread-local; set and consumed on the replying thread.
#pragma once

#include <cstdint>

namespace peregrine::fs {

inline thread_local uint32_t tls_extra_open_flags = 0;

}  // namespace peregrine::fs
