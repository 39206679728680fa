#include "session_io.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fuse_ring.h"
#include "fuse_wire.h"
#include "mark_request.h"

namespace peregrine::fs {
namespace {

SessionIo& session_io(void* userdata) {
  return *static_cast<SessionIo*>(static_cast<TransportHost*>(userdata)->transport);
}

// A direct-IO open's reply (FOPEN_DIRECT_IO) gets FOPEN_PARALLEL_DIRECT_WRITES
// when the host allows it: libfuse 3.14's fuse_file_info has no such bit.
// Every reply that libfuse sends passes here: the thread's own note is
// asked first (and taken), the host only for an open's reply.
void add_open_flags(const TransportHost& host, const wire::OutHeader& out, iovec* iov, int count) {
  if (!take_open_reply(out) || !host.parallel_direct_writes()) return;
  if (out.error != 0 || count < 2 || iov[count - 1].iov_len < sizeof(wire::OpenOut)) return;
  auto* end = static_cast<char*>(iov[count - 1].iov_base) + iov[count - 1].iov_len;
  auto* open_out = reinterpret_cast<wire::OpenOut*>(end - sizeof(wire::OpenOut));
  if ((open_out->open_flags & wire::kOpenDirectIo) != 0) open_out->open_flags |= wire::kOpenParallelDirectWrites;
}

}  // namespace

SessionIo::SessionIo(TransportHost& host, uint64_t wanted_init_flags, LogLine log)
    : host_(host), init_(wanted_init_flags | host.wanted_init_flags()), log_(std::move(log)) {}

int SessionIo::install(fuse_session* se) {
  static const fuse_custom_io io{
      .writev = writev_hook,
      .read = read_hook,
      .splice_receive = nullptr,
      .splice_send = nullptr,
  };
  se_ = se;
  host_.session_mounted(fuse_session_fd(se));
  return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

int SessionIo::serve(fuse_session* se, fuse_loop_config* cfg) { return fuse_session_loop_mt(se, cfg); }

ssize_t SessionIo::reply_to_ring(uint64_t, iovec*, int) { return -EINVAL; }

uint64_t SessionIo::cannot_grant(uint64_t) { return 0; }

void SessionIo::init_replied(uint64_t) {}

ssize_t SessionIo::read_hook(int fd, void* buf, size_t len, void* userdata) {
  SessionIo& self = session_io(userdata);
  bool may_stay_staged = false;
  ssize_t n = self.host_.read_request(fd, buf, len, &may_stay_staged);
  if (n > 0) {
    self.init_.note_request(buf, static_cast<size_t>(n));
    // libfuse processes the request on this thread once the hook returns.
    mark_request(buf, static_cast<size_t>(n));
    tls_request_marks.may_stay_staged = may_stay_staged;
    if (self.rings_registered_.load(std::memory_order_relaxed))
      self.count_dev_fuse_request(buf, static_cast<size_t>(n));
  }
  return n;
}

void SessionIo::count_dev_fuse_request(const void* buf, size_t n) {
  wire::InHeader in;
  if (n < sizeof in) return;
  std::memcpy(&in, buf, sizeof in);
  switch (in.opcode) {
    case wire::kOpInit:
    case wire::kOpInterrupt:
    case wire::kOpForget:
    case wire::kOpDestroy:
    case wire::kOpBatchForget: return;
    default: dev_fuse_requests_.fetch_add(1, std::memory_order_relaxed);
  }
}

ssize_t SessionIo::writev_hook(int fd, iovec* iov, int count, void* userdata) {
  SessionIo& self = session_io(userdata);
  if (count < 1 || iov[0].iov_len < sizeof(wire::OutHeader)) return ::writev(fd, iov, count);
  wire::OutHeader out;
  std::memcpy(&out, iov[0].iov_base, sizeof out);
  add_open_flags(self.host_, out, iov, count);
  if (FuseRing::is_token(out.unique)) {
    ssize_t n = self.reply_to_ring(out.unique, iov, count);
    if (n < 0) {
      errno = static_cast<int>(-n);
      return -1;
    }
    return n;
  }
  bool answers_init = self.init_.patch_reply(iov, count);
  if (answers_init) {
    self.init_.revoke(iov, count, self.cannot_grant(self.init_.granted()));
    if (size_t cap = self.request_bytes_cap(); cap != 0) InitNegotiation::cap_request_bytes(iov, count, cap);
  }
  ssize_t n = ::writev(fd, iov, count);
  // The kernel has processed INIT's reply once the write returns: only
  // then does it accept ring registrations.
  if (answers_init && n >= 0) self.init_replied(self.init_.granted());
  return n;
}

}  // namespace peregrine::fs
