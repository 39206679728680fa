// ReadCall and WriteCall: a FUSE READ or WRITE as the transport hands it to
// the filesystem's read and write handlers (fs_read.cpp, fs_write.cpp),
// with everything the handlers need as arguments, and DataReply, the way
// they answer it. Both transports call the same handlers: the io-uring
// transport decodes READ and WRITE from its ring entries itself and answers
// into the entry; the classic transport (and the io-uring transport's
// blocking-op threads) arrive through libfuse (libfuse_data_ops.cpp).
//
// Thread rules: a call is built and run on the thread that received the
// request. Its DataReply may be used once, from any thread (the drive
// thread that completes the last member IO, or the page-cache store
// thread); until then what the call points at (write data, the reply
// area) stays the request's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "request_marks.h"

namespace peregrine::fs {

// What the host keeps for one of the transport's own threads (a ring
// thread): defined by the host, opaque here. The host makes it when the
// thread starts (TransportHost::ring_thread_started) and gets it back with
// every call the thread makes, so that a request reaches the thread's
// staging queue through its arguments. Null for requests that arrive
// through libfuse, whose threads are libfuse's.
class HostThread;

// Implemented by a transport: delivers the answer to the request `token`
// names (the transport's own number for it).
class DataReplier {
 public:
  // The read's bytes; they may be in the call's reply area already.
  virtual void reply_bytes(uint64_t token, const std::byte* data, size_t n) = 0;
  virtual void reply_written(uint64_t token, uint32_t n) = 0;
  virtual void reply_error(uint64_t token, int err) = 0;  // err > 0

 protected:
  ~DataReplier() = default;
};

struct DataReply {
  DataReplier* to = nullptr;
  uint64_t token = 0;

  void bytes(const std::byte* data, size_t n) const { to->reply_bytes(token, data, n); }
  void written(uint32_t n) const { to->reply_written(token, n); }
  void error(int err) const { to->reply_error(token, err); }
};

// Who sent the request, from its header.
struct Caller {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t pid = 0;
};

struct ReadCall {
  uint64_t ino = 0;
  uint64_t offset = 0;
  uint32_t size = 0;
  RequestMarks marks;
  // Where the reply's bytes go when the transport has such a place (the
  // ring entry's payload, which the kernel copies to the application, 4 KiB
  // aligned): a read that puts its data there saves the copy from its own
  // buffer (1 MiB reads spent 13% of the daemon's CPU in it). Null: none.
  std::byte* reply_area = nullptr;
  size_t reply_area_size = 0;
  DataReply reply;
  HostThread* thread = nullptr;  // the ring thread's, or null (libfuse)
};

struct WriteCall {
  uint64_t ino = 0;
  uint64_t offset = 0;
  const char* data = nullptr;
  uint32_t size = 0;
  RequestMarks marks;  // held_until_reply: `data` stays valid until the reply
  Caller caller;
  DataReply reply;
  HostThread* thread = nullptr;  // the ring thread's, or null (libfuse)
};

}  // namespace peregrine::fs
