// RequestMarks: what the kernel says about a request that libfuse 3.14
// does not hand to an operation, and what the transport says about how it
// runs it. The transport that brought the request sets them
// (transport/mark_request.h): reads and writes carry theirs in their call
// (data_calls.h); an operation libfuse runs (every one on classic; on
// io-uring SETATTR, OPEN, CREATE and the writes a blocking-op thread runs)
// reads this thread's copy at its start, before it hands anything to
// another thread. That copy is the one channel that bypasses the calls,
// because libfuse 3.14 gives an operation nothing but its decoded
// arguments; it flows one way, transport to operation.
//
// Thread rules: tls_request_marks is thread-local; the transport sets it
// on the thread that runs the request, just before libfuse processes it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace peregrine::fs {

struct RequestMarks {
  // The kernel's number for the request: the order in which it sent them
  // (io_gates.h). The io-uring transport sets it from its ring entry, as
  // the header then carries the entry's token.
  uint64_t unique = 0;
  // WRITE of pages from the kernel's page cache (FUSE_WRITE_CACHE): the
  // kernel holds those pages (writeback, or locked to launder them) until
  // the reply, so such a write takes no part in read/write ordering.
  bool from_page_cache = false;
  // READ that fills the kernel's page cache (a fault of a mapping,
  // readahead, or any read with fuse.cache=writeback), not a read(2) the
  // kernel passes straight through.
  bool fills_page_cache = false;
  // READ through a file opened with O_NOATIME (the owner's or root's):
  // it is no access, as on ext4.
  bool no_atime = false;
  // WRITE, SETATTR with a size, OPEN with O_TRUNC: the caller lacks
  // CAP_FSETID and the file's suid/sgid bits must go as the VFS would
  // remove them (FUSE_HANDLE_KILLPRIV_V2).
  bool kill_suidgid = false;
  // SETATTR naming no attribute (but perhaps ctime): the kernel's
  // file_remove_privs() or a chown(2) to -1, -1, which under
  // FUSE_HANDLE_KILLPRIV_V2 leave the mode change to the filesystem.
  bool remove_privs = false;
  // CREATE that came as FUSE_TMPFILE (open(2) with O_TMPFILE): the new
  // inode gets no name.
  bool tmpfile = false;
  // The request's bytes stay where the transport put them until it is
  // answered (an io-uring entry's payload belongs to its request until the
  // reply): a write may send its data to the members from there instead of
  // copying it. Classic transport: false (a worker reuses its buffer for
  // the next request as soon as the handler returns).
  bool held_until_reply = false;
  // Served by an io-uring ring thread, which runs on its caller's CPU and
  // answers the caller's next request there: the member IO of a write it
  // answered early is better left to the drive threads, which may hold it
  // for its neighbours (Request::may_hold). A classic worker answers from
  // another CPU, and its caller's wake-up costs more when the drive
  // threads sleep through a hold: there the IO goes at once.
  bool on_ring = false;
  // The thread that runs the request hands the IO it staged on before it
  // can sleep (a classic worker's batching request reader, a ring thread
  // between requests): a read or write may end with its member IO staged
  // for the next request to join (request_staging.h). Set by the
  // transport, from its host's reader on classic.
  bool may_stay_staged = false;
};

// For requests libfuse runs: every request on classic, the rest on io-uring
// (whose rings hand their own READ and WRITE the marks in the call).
inline thread_local RequestMarks tls_request_marks;

}  // namespace peregrine::fs
