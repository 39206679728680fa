// mark_request: reads from a raw FUSE request what libfuse 3.14 does not
// hand to operations (RequestMarks, request_marks.h), and rewrites what
// it cannot decode: FUSE_TMPFILE (no op in its table, it would answer
// ENOSYS and the kernel would refuse O_TMPFILE for the rest of the mount)
// becomes FUSE_CREATE, whose arguments and reply it shares, marked
// `tmpfile`.
//
// Thread rules: pure functions, except that mark_request() sets the calling
// thread's tls_request_marks and notes the OPEN or CREATE it runs, which
// take_open_reply() asks for on the same thread.
#pragma once

#include <cstddef>

#include "request_marks.h"
#include "fuse_wire.h"

namespace peregrine::fs {

// The marks of a request with header `in` and first argument `arg`
// (`arg_bytes` of it present), except held_until_reply, which only the
// transport knows. unique is the header's.
RequestMarks marks_of(const wire::InHeader& in, const void* arg, size_t arg_bytes);

// Whether a request is a READ or WRITE that bypasses the kernel's page
// cache (O_DIRECT, or any IO on a fuse.cache = direct mount): its caller
// gains from the ring thread finishing on another CPU (reply_yield.h).
bool direct_data(const wire::InHeader& in, const void* arg, size_t arg_bytes);

// Sets this thread's marks from a request (fuse_in_header first, `n`
// bytes) and rewrites FUSE_TMPFILE into FUSE_CREATE in place.
void mark_request(void* buf, size_t n);

// Whether `out` is the reply to the OPEN or CREATE (or TMPFILE) that
// mark_request() marked last on this thread: a reply with a fuse_open_out
// at its end, whose flags the transport may add to. True once: the note is
// taken, so that a later reply reusing the unique (a ring entry's token,
// for the entry's next request, which this thread may complete without
// marking it) is never taken for it.
bool take_open_reply(const wire::OutHeader& out);

}  // namespace peregrine::fs
