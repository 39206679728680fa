#include "request_marks.h"

#include <cstring>

#include "fuse_wire.h"

namespace peregrine::fs {
namespace {

// The opcode's first argument, if the request holds all of it.
template <typename Arg>
bool first_arg(const void* buf, size_t n, Arg* arg) {
  if (n < sizeof(wire::InHeader) + sizeof(Arg)) return false;
  std::memcpy(arg, static_cast<const char*>(buf) + sizeof(wire::InHeader), sizeof(Arg));
  return true;
}

}  // namespace

void mark_request(void* buf, size_t n) {
  RequestMarks m;
  wire::InHeader in;
  if (n >= sizeof in) {
    std::memcpy(&in, buf, sizeof in);
    m.unique = in.unique;
    switch (in.opcode) {
      case wire::kOpWrite: {
        wire::WriteIn w;
        if (first_arg(buf, n, &w)) {
          m.kill_suidgid = (w.write_flags & wire::kWriteKillSuidgid) != 0;
          m.from_page_cache = (w.write_flags & wire::kWriteCache) != 0;
        }
        break;
      }
      case wire::kOpRead: {
        wire::ReadIn r;
        m.fills_page_cache = first_arg(buf, n, &r) && (r.read_flags & wire::kReadLockOwner) == 0;
        break;
      }
      case wire::kOpSetattr: {
        wire::SetattrInValid s;
        if (first_arg(buf, n, &s)) {
          m.kill_suidgid = (s.valid & wire::kFattrKillSuidgid) != 0;
          m.remove_privs = (s.valid & wire::kFattrChanges) == 0;
        }
        break;
      }
      case wire::kOpOpen: {
        wire::OpenIn o;
        m.kill_suidgid = first_arg(buf, n, &o) && (o.open_flags & wire::kOpenKillSuidgid) != 0;
        break;
      }
      case wire::kOpTmpfile:
        in.opcode = wire::kOpCreate;
        std::memcpy(buf, &in, sizeof in);
        m.tmpfile = true;
        break;
      default:
        break;
    }
  }
  tls_request_marks = m;
}

}  // namespace peregrine::fs
