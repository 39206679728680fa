#include "uring_transport.h"

#include <sys/sysinfo.h>
#include <syslog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fuse_wire.h"
#include "peregrine/fs/open_files_xattr.h"
#include "mark_request.h"

namespace peregrine::fs {
namespace {

// A write of whole 4 KiB blocks is served where it arrives; any other does
// read-modify-write of its edge blocks, which waits for member IO.
bool whole_blocks(uint64_t offset, uint32_t size) { return offset % 4096 == 0 && size % 4096 == 0; }

bool page_cache_write(const wire::WriteIn& w) { return (w.write_flags & wire::kWriteCache) != 0; }

// Whether a request may wait for member IO or for other requests while it
// runs: fsync, zeroing on truncate and fallocate, read-modify-write of
// partial blocks (fs_write.cpp), copies and FITRIM; and the root's list of
// files open for writing, which walks the directories. A SETATTR waits only
// when it truncates (the file's gate, its tail block): chown, chmod and
// utimes, three of an unpacked file's five requests, run where they arrive.
bool may_block(const wire::InHeader& in, const fuse_buf& buf) {
  switch (in.opcode) {
    case wire::kOpSetattr: {
      wire::SetattrInValid s;
      if (buf.size < sizeof in + sizeof s) return true;
      std::memcpy(&s, static_cast<const char*>(buf.mem) + sizeof in, sizeof s);
      return (s.valid & wire::kFattrSize) != 0;
    }
    case wire::kOpFsync:
    case wire::kOpFsyncdir:
    case wire::kOpFallocate:
    case wire::kOpCopyFileRange:
    case wire::kOpIoctl:  // FITRIM waits for the journal and member discards
      return true;
    case wire::kOpGetxattr: {
      const size_t skip = sizeof in + sizeof(wire::GetxattrIn);
      const size_t len = std::strlen(kOpenFilesXattr);
      return in.nodeid == FUSE_ROOT_ID && buf.size >= skip + len &&
             std::memcmp(static_cast<const char*>(buf.mem) + skip, kOpenFilesXattr, len) == 0;
    }
    case wire::kOpWrite: {
      wire::WriteIn w;
      if (buf.size < sizeof in + sizeof w) return true;
      std::memcpy(&w, static_cast<const char*>(buf.mem) + sizeof in, sizeof w);
      // A WRITE comes here only when the ring's try declined it
      // (run_data_request), or when the host runs no data calls: its other
      // path waits.
      return true;
    }
    default: return false;
  }
}

}  // namespace

UringTransport::UringTransport(TransportHost& host, LogLine log, std::function<void()> serving)
    : SessionIo(host, wire::kDirectIoAllowMmap | wire::kOverIoUring, std::move(log)), serving_(std::move(serving)) {}

UringTransport::~UringTransport() {
  quiesce();
  stop();
}

uint64_t UringTransport::cannot_grant(uint64_t granted) {
  if ((granted & wire::kOverIoUring) == 0) return 0;
  // The kernel keeps one queue per possible CPU and, once io_uring is
  // granted, holds every request until each queue has an entry: a ring
  // for each, made now, so that a daemon that cannot make them all serves
  // over /dev/fuse instead.
  int cpus = get_nprocs_conf();
  TransportHost::Limits limits = host_.transport_limits();
  // Kernel: max(FUSE_MIN_READ_BUFFER, max_write, max_pages * page size);
  // libfuse asks for max_pages = max_write / page size, and INIT's reply
  // lowers both to the plan's payload (request_bytes_cap()).
  plan_ = plan_rings(static_cast<unsigned>(cpus), limits.ring_depth,
                     std::max<size_t>(wire::kMinPayloadBytes, limits.max_request_bytes), limits.ring_memory_bytes);
  if (!plan_.within_budget) {
    log_(LOG_WARNING, "FUSE rings: " + std::to_string(cpus) + " CPUs need " +
                          std::to_string(plan_.reserved_bytes >> 20) +
                          " MiB even at their smallest shape, above fuse.ring_memory_mib (" +
                          std::to_string(limits.ring_memory_bytes >> 20) + " MiB)");
  }
  FuseRing::Shape shape;
  shape.entries = plan_.entries;
  shape.payload_bytes = plan_.payload_bytes;
  shape.placement = limits.pin_rings ? FuseRing::Shape::Placement::pinned : FuseRing::Shape::Placement::adaptive;
  shape.yield_ns = limits.ring_yield_ns != 0 && ReplyYield::permitted() ? limits.ring_yield_ns : 0;
  shape.spin = host_.request_spin();
  if (limits.ring_yield_ns != 0 && shape.yield_ns == 0) {
    log_(LOG_INFO,
         "FUSE rings: fuse.ring_yield_ns is set, but this process may not leave SCHED_IDLE once in it "
         "(no CAP_SYS_NICE, RLIMIT_NICE too low): ring threads keep their scheduling policy");
  }
  for (int q = 0; q < cpus; ++q) {
    shape.qid = static_cast<uint16_t>(q);
    rings_.push_back(std::make_unique<FuseRing>(*this, fuse_session_fd(se_), shape, log_));
    if (int rc = rings_.back()->prepare(); rc != 0) {
      log_(LOG_ERR,
           "FUSE transport: classic, because ring " + std::to_string(q) + " cannot be created: " + std::strerror(-rc));
      rings_.clear();  // stops those already prepared
      return wire::kOverIoUring;
    }
  }
  blocking_.emplace(limits.workers, [this](const fuse_buf& buf) {
    run_inline(buf, false);
    host_.hand_on_staged(nullptr);
  });
  // Every ring exists before the first serves: a ring thread may answer a
  // request (through reply_to_ring) while later rings still register.
  started_.store(true, std::memory_order_release);
  return 0;
}

void UringTransport::init_replied(uint64_t granted) {
  if ((granted & wire::kOverIoUring) == 0) {
    if (!started_.load(std::memory_order_acquire) && rings_.empty() && (init_.offered() & wire::kOverIoUring) == 0) {
      log_(LOG_NOTICE,
           "FUSE transport: classic (the kernel did not offer FUSE over io_uring at INIT; is the fuse "
           "module's enable_uring parameter still on?)");
    }
    serving_();
    return;
  }
  bool all = true;
  for (auto& ring : rings_) {
    int rc = ring->start();
    if (rc != 0) {
      // A refused registration turns io_uring off for this connection in
      // the kernel, which then serves everything over /dev/fuse.
      log_(LOG_ERR, "FUSE ring " + std::to_string(ring->qid()) + ": cannot register: " + std::strerror(-rc) +
                        "; requests stay on /dev/fuse (classic)");
      all = false;
      break;
    }
  }
  if (all) {
    rings_registered();
    log_(LOG_INFO, "FUSE transport: io-uring, " + std::to_string(rings_.size()) + " rings (one per CPU) of " +
                       std::to_string(rings_.front()->entries()) + " requests of up to " +
                       std::to_string(plan_.payload_bytes >> 10) + " KiB (" +
                       std::to_string(plan_.reserved_bytes >> 20) + " MiB of address space)");
  }
  serving_();
}

size_t UringTransport::request_bytes_cap() const {
  // Only once rings exist (cannot_grant() made them): a connection that
  // stays classic keeps fuse.max_request_bytes.
  return rings_.empty() ? 0 : plan_.payload_bytes;
}

ssize_t UringTransport::reply_to_ring(uint64_t unique, iovec* iov, int count) {
  uint16_t q = FuseRing::token_qid(unique);
  ssize_t n = -EINVAL;
  if (started_.load(std::memory_order_acquire) && q < rings_.size()) {
    n = rings_[q]->reply(FuseRing::token_entry(unique), iov, count);
  }
  // A reply that cannot be delivered leaves its caller waiting until the
  // unmount: never expected, so always worth a line.
  if (n < 0)
    log_(LOG_ERR, "FUSE reply to ring " + std::to_string(q) + " dropped: " + std::strerror(static_cast<int>(-n)));
  return n;
}

bool UringTransport::only_ring_busy_since(const FuseRing& ring, uint64_t since_ns) const {
  // rings_ is filled before any ring thread serves and never changes after.
  for (const auto& other : rings_) {
    const uint64_t last = other->last_busy_round_ns();
    if (other.get() != &ring && last != 0 && last >= since_ns) return false;
  }
  return true;
}

void UringTransport::run_inline(const fuse_buf& buf, bool data) {
  mark_request(buf.mem, buf.size);
  wire::InHeader in;
  std::memcpy(&in, buf.mem, sizeof in);
  const uint16_t q = FuseRing::token_qid(in.unique);
  const bool ring_request = FuseRing::is_token(in.unique) && q < rings_.size();
  tls_request_marks.unique = ring_request ? rings_[q]->kernel_unique(FuseRing::token_entry(in.unique)) : 0;
  tls_request_marks.held_until_reply = ring_request;
  tls_request_marks.may_stay_staged = data;
  fuse_session_process_buf(se_, &buf);
}

void UringTransport::run_request(FuseRing& ring, uint32_t, const fuse_buf& buf) {
  wire::InHeader in;
  std::memcpy(&in, buf.mem, sizeof in);
  if (may_block(in, buf)) {
    // It may wait for IO that this thread has staged: hand that on first.
    host_.hand_on_staged(ring.host_thread());
    if (in.opcode == wire::kOpFsync && ring.alone_in_round() && host_.fsync_is_short(in.nodeid)) {
      // A short fsync (a database's commit) with nothing else for this
      // ring: the hand-off to a blocking-op thread, which wakes on another
      // CPU, and its reply's way back cost half as much again as the
      // fsync's own work, and no request waits behind it (docs/transport.md).
      inline_fsyncs_.fetch_add(1, std::memory_order_relaxed);
      ring.send_queued_replies();  // their callers must not wait for this one
      run_inline(buf, false);
      return;
    }
    blocking_->push(buf);
    return;
  }
  bool data = in.opcode == wire::kOpRead || in.opcode == wire::kOpWrite;
  // Any other kind of request may wait for IO: only reads and writes run
  // with the batch still staged, as on the classic transport.
  if (!data) host_.hand_on_staged(ring.host_thread());
  run_inline(buf, data);
}

bool UringTransport::run_data_request(FuseRing& ring, uint32_t entry, const wire::InHeader& in, const void* op_in,
                                      size_t op_bytes, uint32_t payload_sz) {
  if ((in.opcode != wire::kOpRead && in.opcode != wire::kOpWrite) || !host_.runs_data_calls()) return false;
  RequestMarks marks = marks_of(in, op_in, op_bytes);
  // The entry belongs to the request until its reply, and this thread
  // hands staged IO on between requests.
  marks.held_until_reply = true;
  marks.may_stay_staged = true;
  marks.on_ring = true;
  const DataReply reply{this, (uint64_t{ring.qid()} << 32) | entry};
  if (in.opcode == wire::kOpRead) {
    wire::ReadIn r;
    if (op_bytes < sizeof r) return refuse_malformed(in, reply);
    std::memcpy(&r, op_in, sizeof r);
    const ReadCall call{.ino = in.nodeid,
                        .offset = r.offset,
                        .size = r.size,
                        .marks = marks,
                        .reply_area = ring.payload_of(entry),
                        .reply_area_size = ring.payload_capacity(),
                        .reply = reply,
                        .thread = ring.host_thread()};
    host_.run_read(call);
    return true;
  }
  wire::WriteIn w;
  if (op_bytes < sizeof w) return refuse_malformed(in, reply);
  std::memcpy(&w, op_in, sizeof w);
  // libfuse 3.14 would trust the size too, and write whatever the payload
  // held before.
  if (w.size > payload_sz) return refuse_malformed(in, reply);
  const WriteCall call{.ino = in.nodeid,
                       .offset = w.offset,
                       .data = reinterpret_cast<const char*>(ring.payload_of(entry)),
                       .size = w.size,
                       .marks = marks,
                       .caller = Caller{in.uid, in.gid, in.pid},
                       .reply = reply,
                       .thread = ring.host_thread()};
  // A page-cache writeback (nearly every small file's is cut at the end of
  // the file): the aligned path, written behind, or a blocking-op thread's.
  if (page_cache_write(w)) return host_.try_run_page_cache_write(call);
  // Read-modify-write: here only if that waits for nothing, else a
  // blocking-op thread's (may_block()).
  if (!whole_blocks(w.offset, w.size)) return host_.try_run_write_without_waiting(call);
  // Whole blocks: the aligned path, else a blocking-op thread's (the
  // exclusive path waits for the file's gate and for its member IO).
  return host_.try_run_aligned_write(call);
}

bool UringTransport::refuse_malformed(const wire::InHeader& in, const DataReply& reply) {
  if (!logged_malformed_.exchange(true)) {
    log_(LOG_ERR, "FUSE ring: malformed " + std::string(in.opcode == wire::kOpRead ? "READ" : "WRITE") + " (len " +
                      std::to_string(in.len) + "): answered EIO");
  }
  reply.error(EIO);
  return true;
}

void UringTransport::reply_bytes(uint64_t token, const std::byte* data, size_t n) {
  rings_[token >> 32]->reply_payload(static_cast<uint32_t>(token), 0, data, n);
}

void UringTransport::reply_written(uint64_t token, uint32_t n) {
  wire::WriteOut out{n, 0};
  rings_[token >> 32]->reply_payload(static_cast<uint32_t>(token), 0, &out, sizeof out);
}

void UringTransport::reply_error(uint64_t token, int err) {
  rings_[token >> 32]->reply_payload(static_cast<uint32_t>(token), err, nullptr, 0);
}

void UringTransport::ring_idle(FuseRing& ring) { host_.unplug_between_requests(ring.host_thread()); }

void UringTransport::ring_thread_started(FuseRing& ring) {
  ring.set_host_thread(host_.ring_thread_started(&FuseRing::has_work, &ring));
}

void UringTransport::quiesce() {
  if (!started_.load(std::memory_order_acquire)) return;
  for (auto& ring : rings_) ring->quiesce();
  // Requests it is running finish and reply; queued ones are dropped.
  if (blocking_) blocking_->stop();
}

void UringTransport::stop() {
  if (!started_.load(std::memory_order_acquire)) return;
  for (auto& ring : rings_) ring->stop();
}

TransportStatus UringTransport::status() const {
  if (!started_.load(std::memory_order_acquire) || !rings_are_registered()) {
    return TransportStatus{"classic", {}, dev_fuse_requests()};
  }
  TransportStatus s{"io-uring", {}, dev_fuse_requests()};
  for (const auto& ring : rings_) s.ring_requests.push_back(ring->requests_served());
  s.ring_entries = plan_.entries;
  s.ring_request_bytes = plan_.payload_bytes;
  for (const auto& ring : rings_) s.ring_data_requests += ring->data_requests_run();
  for (const auto& ring : rings_) s.ring_yielded_replies += ring->yielded_replies();
  for (const auto& ring : rings_) s.ring_yield_stalls += ring->yield_stalls();
  s.ring_inline_fsyncs = inline_fsyncs_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace peregrine::fs
