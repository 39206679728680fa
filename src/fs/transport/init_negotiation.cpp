#include "init_negotiation.h"

#include <cstring>

#include "fuse_wire.h"

namespace peregrine::fs {
namespace {

// INIT flags in fuse_init_out.flags; the rest travel in flags2.
constexpr uint64_t kLowFlags = 0xffffffff;

}  // namespace

void InitNegotiation::note_request(const void* buf, size_t n) {
  wire::InHeader in;
  if (n < sizeof in) return;
  std::memcpy(&in, buf, sizeof in);
  if (in.opcode != wire::kOpInit) return;
  wire::InitIn arg{};
  size_t arg_bytes = n - sizeof in < sizeof arg ? n - sizeof in : sizeof arg;
  std::memcpy(&arg, static_cast<const char*>(buf) + sizeof in, arg_bytes);
  uint64_t flags = arg.flags;
  // flags2 means something only with FUSE_INIT_EXT, and only kernels that
  // send the extended INIT (7.36+) have it.
  if ((flags & wire::kInitExt) != 0 && sizeof in + wire::kInitInFlags2End <= n) {
    flags |= uint64_t{arg.flags2} << 32;
  }
  offered_.store(flags);
  init_unique_.store(in.unique);
}

bool InitNegotiation::patch_reply(iovec* iov, int count) {
  uint64_t unique = init_unique_.load();
  if (unique == 0 || count < 1 || iov[0].iov_len < sizeof(wire::OutHeader)) return false;
  wire::OutHeader out;
  std::memcpy(&out, iov[0].iov_base, sizeof out);
  if (out.unique != unique) return false;
  init_unique_.store(0);
  if (out.error != 0 || count < 2 || iov[1].iov_len < sizeof(wire::InitOut)) return true;
  uint64_t offered = offered_.load();
  uint64_t grant = wanted_ & offered;
  // Flags in flags2 exist only with FUSE_INIT_EXT (note_request() saw none
  // without it).
  if ((offered & wire::kInitExt) == 0) grant &= kLowFlags;
  if (grant == 0) return true;
  auto* init_out = static_cast<wire::InitOut*>(iov[1].iov_base);
  init_out->flags |= static_cast<uint32_t>(grant & kLowFlags);
  if ((grant & ~kLowFlags) != 0) {
    init_out->flags |= static_cast<uint32_t>(wire::kInitExt);
    init_out->flags2 |= static_cast<uint32_t>(grant >> 32);
  }
  granted_.store(grant);
  return true;
}

void InitNegotiation::revoke(iovec* iov, int count, uint64_t flags) {
  uint64_t take = granted_.load() & flags;
  if (take == 0 || count < 2 || iov[1].iov_len < sizeof(wire::InitOut)) return;
  auto* init_out = static_cast<wire::InitOut*>(iov[1].iov_base);
  init_out->flags &= ~static_cast<uint32_t>(take & kLowFlags);
  init_out->flags2 &= ~static_cast<uint32_t>(take >> 32);
  granted_.store(granted_.load() & ~take);
}

void InitNegotiation::cap_request_bytes(iovec* iov, int count, size_t bytes) {
  if (count < 2 || iov[1].iov_len < sizeof(wire::InitOut)) return;
  auto* init_out = static_cast<wire::InitOut*>(iov[1].iov_base);
  if (init_out->max_write > bytes) init_out->max_write = static_cast<uint32_t>(bytes);
  // The kernel sizes a request by max_pages as well (reads, and writes
  // with FUSE_MAX_PAGES granted).
  const size_t pages = bytes / 4096;
  if (init_out->max_pages > pages) init_out->max_pages = static_cast<uint16_t>(pages);
}

}  // namespace peregrine::fs
