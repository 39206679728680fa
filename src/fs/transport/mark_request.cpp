#include "mark_request.h"

#include <fcntl.h>

#include <cstring>

namespace peregrine::fs {
namespace {

// The opcode's first argument, if the request holds all of it.
template <typename Arg>
bool first_arg(const void* arg, size_t n, Arg* out) {
  if (n < sizeof(Arg)) return false;
  std::memcpy(out, arg, sizeof(Arg));
  return true;
}

// The OPEN or CREATE this thread runs through libfuse, by its header's
// unique (a ring entry's token on io-uring): its reply gets the open flags
// libfuse 3.14 cannot set (session_io.cpp). Private to the transport.
struct OpenMarked {
  bool opens = false;
  uint64_t unique = 0;
};
thread_local OpenMarked tls_open_marked;

}  // namespace

bool direct_data(const wire::InHeader& in, const void* arg, size_t n) {
  if (in.opcode != wire::kOpRead && in.opcode != wire::kOpWrite) return false;
  const RequestMarks m = marks_of(in, arg, n);
  return in.opcode == wire::kOpRead ? !m.fills_page_cache : !m.from_page_cache;
}

RequestMarks marks_of(const wire::InHeader& in, const void* arg, size_t n) {
  RequestMarks m;
  m.unique = in.unique;
  switch (in.opcode) {
    case wire::kOpWrite: {
      wire::WriteIn w;
      if (first_arg(arg, n, &w)) {
        m.kill_suidgid = (w.write_flags & wire::kWriteKillSuidgid) != 0;
        m.from_page_cache = (w.write_flags & wire::kWriteCache) != 0;
      }
      break;
    }
    case wire::kOpRead: {
      wire::ReadIn r;
      const bool has_args = first_arg(arg, n, &r);
      m.fills_page_cache = has_args && (r.read_flags & wire::kReadLockOwner) == 0;
      m.no_atime = has_args && (r.flags & O_NOATIME) != 0;
      break;
    }
    case wire::kOpSetattr: {
      wire::SetattrInValid s;
      if (first_arg(arg, n, &s)) {
        m.kill_suidgid = (s.valid & wire::kFattrKillSuidgid) != 0;
        m.remove_privs = (s.valid & wire::kFattrChanges) == 0;
      }
      break;
    }
    case wire::kOpOpen: {
      wire::OpenIn o;
      m.kill_suidgid = first_arg(arg, n, &o) && (o.open_flags & wire::kOpenKillSuidgid) != 0;
      break;
    }
    case wire::kOpTmpfile: m.tmpfile = true; break;
    default: break;
  }
  return m;
}

void mark_request(void* buf, size_t n) {
  wire::InHeader in;
  if (n < sizeof in) {
    tls_request_marks = RequestMarks{};
    tls_open_marked = OpenMarked{};
    return;
  }
  std::memcpy(&in, buf, sizeof in);
  tls_request_marks = marks_of(in, static_cast<const char*>(buf) + sizeof in, n - sizeof in);
  const bool opens = in.opcode == wire::kOpOpen || in.opcode == wire::kOpCreate || in.opcode == wire::kOpTmpfile;
  tls_open_marked = OpenMarked{opens, in.unique};
  if (in.opcode == wire::kOpTmpfile) {
    in.opcode = wire::kOpCreate;
    std::memcpy(buf, &in, sizeof in);
  }
}

bool take_open_reply(const wire::OutHeader& out) {
  // The unique, not only the opcode: the thread may complete other requests
  // (a read whose IO finished) while it runs the open.
  if (!tls_open_marked.opens || tls_open_marked.unique != out.unique) return false;
  tls_open_marked = OpenMarked{};
  return true;
}

}  // namespace peregrine::fs
