// UringTransport: FUSE over io_uring (docs/transport.md). Until INIT is
// answered it is the classic transport; its INIT reply asks for
// FUSE_OVER_IO_URING, and once the kernel has granted it, one FuseRing per
// possible CPU registers its entries. The kernel switches to the rings when
// every queue has one; from then on /dev/fuse carries only INIT, FORGET,
// INTERRUPT and notifications, still served by libfuse's loop.
//
// A ring thread runs reads, writes and every request that does not wait
// for IO itself; the others go to BlockingOps, so no ring thread waits for
// member IO, but for a short FSYNC (TransportHost::fsync_is_short) that
// is the ring's only request (its round's one, nothing else queued; the
// replies queued are sent first): a database's commit, whose hand-off
// would cost half as much again as its own work (docs/transport.md). It
// decodes READ and block-aligned WRITE itself and hands them to the host
// as calls (data_calls.h), answered straight into the entry (DataReplier);
// everything else goes through libfuse, whose replies from any thread
// reach their ring by the unique token.
//
// Thread rules: as Transport. rings_ is filled once, on the libfuse worker
// that answers INIT, before started_ is set (release) and before any ring
// starts; readers check started_ (acquire) first, except the DataReplier
// calls: their token comes from a request a started ring ran, which
// happened after started_ was set.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "blocking_ops.h"
#include "fuse_ring.h"
#include "ring_budget.h"
#include "session_io.h"

namespace peregrine::fs {

class UringTransport final : public SessionIo, public FuseRing::Owner, public DataReplier {
 public:
  UringTransport(TransportHost& host, LogLine log, std::function<void()> serving);
  ~UringTransport() override;

  void quiesce() override;
  void stop() override;
  TransportStatus status() const override;

  // FuseRing::Owner
  void run_request(FuseRing& ring, uint32_t entry, const fuse_buf& buf) override;
  void ring_idle(FuseRing& ring) override;
  void ring_thread_started(FuseRing& ring) override;
  bool background_idle() const override { return host_.background_idle(); }
  bool only_ring_busy_since(const FuseRing& ring, uint64_t since_ns) const override;
  bool run_data_request(FuseRing& ring, uint32_t entry, const wire::InHeader& in, const void* op_in, size_t op_bytes,
                        uint32_t payload_sz) override;

  // DataReplier: the token is the ring (bits 32-47) and the entry.
  void reply_bytes(uint64_t token, const std::byte* data, size_t n) override;
  void reply_written(uint64_t token, uint32_t n) override;
  void reply_error(uint64_t token, int err) override;

 private:
  ssize_t reply_to_ring(uint64_t unique, iovec* iov, int count) override;
  uint64_t cannot_grant(uint64_t granted) override;
  void init_replied(uint64_t granted) override;
  size_t request_bytes_cap() const override;
  void run_inline(const fuse_buf& buf, bool is_data);
  // Answers a READ or WRITE whose arguments do not add up with EIO (and
  // says so once); returns true: the request is answered.
  bool refuse_malformed(const wire::InHeader& in, const DataReply& reply);

  RingPlan plan_;  // set with rings_
  std::vector<std::unique_ptr<FuseRing>> rings_;
  std::atomic<bool> started_{false};
  std::optional<BlockingOps> blocking_;
  std::atomic<uint64_t> inline_fsyncs_{0};  // ring threads add, status() reads
  std::function<void()> serving_;
  std::atomic<bool> logged_malformed_{false};
};

}  // namespace peregrine::fs
