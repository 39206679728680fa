// ReplyArea: where the reply to the request this thread is running will be
// delivered, when the transport has such a place: the io-uring transport's
// entry payload, which the kernel copies to the application. A read that
// puts its data there directly saves the copy from its own buffer into the
// payload (1 MiB reads spent 13% of the daemon's CPU in it); the ring's
// reply hook sees the data already in place and does not move it.
//
// Thread rules: thread-local; the ring thread sets it around one request
// and clears it afterwards; only that request's op reads it. Empty on the
// classic transport, whose replies go out with writev from any buffer.
#pragma once

#include <cstddef>

namespace peregrine::fs {

struct ReplyArea {
  std::byte* data = nullptr;  // 4 KiB aligned
  size_t size = 0;
};

inline thread_local ReplyArea tls_reply_area;

}  // namespace peregrine::fs
