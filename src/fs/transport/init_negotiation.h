// InitNegotiation: the INIT flags libfuse 3.14 cannot ask for. The
// transport's /dev/fuse hooks show it every request read (it remembers
// INIT's unique and what the kernel offers) and every reply before it is
// written (it adds the wanted flags the kernel offered to INIT's reply).
//
// Thread rules: INIT is read and answered once, on one libfuse worker;
// the atomics make offered()/granted() safe to read from any thread after.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace peregrine::fs {

class InitNegotiation {
 public:
  // `wanted`: INIT flags (wire::k*) to grant whenever the kernel offers them
  // (those of flags2 only with FUSE_INIT_EXT). libfuse's own choices in the
  // reply are kept.
  explicit InitNegotiation(uint64_t wanted) : wanted_(wanted) {}

  // A request as read from /dev/fuse (any opcode; only INIT is kept).
  void note_request(const void* buf, size_t n);
  // A reply about to be written (fuse_out_header first). Adds the granted
  // flags if it answers INIT successfully; returns whether it answers INIT.
  bool patch_reply(iovec* iov, int count);

  // Takes flags back out of an INIT reply patch_reply() granted them in
  // (the daemon found it cannot serve them after all).
  void revoke(iovec* iov, int count, uint64_t flags);

  // Lowers max_write and max_pages in an INIT reply so that no request
  // carries more than `bytes` (a page multiple) of data.
  static void cap_request_bytes(iovec* iov, int count, size_t bytes);

  uint64_t offered() const { return offered_.load(); }
  uint64_t granted() const { return granted_.load(); }

 private:
  const uint64_t wanted_;
  std::atomic<uint64_t> init_unique_{0};
  std::atomic<uint64_t> offered_{0};
  std::atomic<uint64_t> granted_{0};
};

}  // namespace peregrine::fs
