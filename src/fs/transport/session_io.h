// SessionIo: the part both transports share. It routes the session's
// /dev/fuse IO through libfuse's custom-io hooks (fuse_session_custom_io):
// requests are read through the batching request reader (or plainly) and
// marked for the operation libfuse runs next on that thread (request_marks.h),
// and every reply passes one hook that
//   - adds INIT flags libfuse 3.14 cannot ask for (InitNegotiation),
//   - adds FOPEN_PARALLEL_DIRECT_WRITES to direct-IO opens,
//   - sends replies to ring requests to their ring instead of /dev/fuse.
// The classic transport is SessionIo with libfuse's multi-threaded loop.
//
// Thread rules: as Transport. The hooks run on whatever thread reads or
// replies; they touch only atomics and the calling thread's own state.
#pragma once

#include <atomic>
#include <string>

#include "init_negotiation.h"
#include "transport.h"

namespace peregrine::fs {

class SessionIo : public Transport {
 public:
  SessionIo(TransportHost& host, uint64_t wanted_init_flags, LogLine log);

  int install(fuse_session* se) override;
  int serve(fuse_session* se, fuse_loop_config* cfg) override;
  void quiesce() override {}
  void stop() override {}
  TransportStatus status() const override { return TransportStatus{"classic", {}, 0}; }

 protected:
  // A reply to a ring request (FuseRing::is_token(unique)).
  virtual ssize_t reply_to_ring(uint64_t unique, iovec* iov, int count);
  // INIT's reply grants these flags: returns those the transport cannot
  // serve after all, which are taken back before the reply is written
  // (libfuse worker).
  virtual uint64_t cannot_grant(uint64_t granted);
  // INIT has been answered with these flags granted (libfuse worker).
  virtual void init_replied(uint64_t granted);
  // The largest request the transport can carry once INIT is answered
  // with the flags granted so far, 0 for no limit of its own: INIT's reply
  // lowers max_write and max_pages to it (libfuse worker, after
  // cannot_grant()).
  virtual size_t request_bytes_cap() const { return 0; }

  // From now on only INIT, FORGET, INTERRUPT and DESTROY should arrive on
  // /dev/fuse: count anything else (TransportStatus::dev_fuse_requests).
  void rings_registered() { rings_registered_.store(true); }
  bool rings_are_registered() const { return rings_registered_.load(); }
  uint64_t dev_fuse_requests() const { return dev_fuse_requests_.load(std::memory_order_relaxed); }

  TransportHost& host_;
  InitNegotiation init_;
  LogLine log_;
  fuse_session* se_ = nullptr;

 private:
  static ssize_t read_hook(int fd, void* buf, size_t len, void* userdata);
  static ssize_t writev_hook(int fd, iovec* iov, int count, void* userdata);
  void count_dev_fuse_request(const void* buf, size_t n);

  std::atomic<bool> rings_registered_{false};
  std::atomic<uint64_t> dev_fuse_requests_{0};
};

}  // namespace peregrine::fs
