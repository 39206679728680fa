#include "fuse_ring.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <future>
#include <stdexcept>

#include "fuse_wire.h"
#include "mark_request.h"
#include "peregrine/util/clock.h"

namespace peregrine::fs {

FuseRing::FuseRing(Owner& owner, int fuse_fd, Shape shape, LogLine log)
    : owner_(owner), fuse_fd_(fuse_fd), shape_(shape), log_(std::move(log)) {}

FuseRing::~FuseRing() {
  stop();
  if (area_ != nullptr) ::munmap(area_, area_bytes_);
  delete[] register_iov_;
}

int FuseRing::prepare() {
  stride_ = kHeaderPage + (shape_.payload_bytes + 4095) / 4096 * 4096;
  area_bytes_ = stride_ * shape_.entries;
  void* p = ::mmap(nullptr, area_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return -errno;
  area_ = static_cast<std::byte*>(p);
  register_iov_ = new iovec[size_t{2} * shape_.entries];
  for (uint32_t e = 0; e < shape_.entries; ++e) {
    register_iov_[2 * e] = iovec{entry_base(e), sizeof(wire::UringReqHeader)};
    register_iov_[2 * e + 1] = iovec{payload(e), payload_room()};
  }
  unique_.assign(shape_.entries, 0);
  direct_entry_.assign(shape_.entries, 0);
  local_commits_.reserve(shape_.entries);
  remote_ = std::make_unique<CommitStack>(shape_.entries);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return -errno;
  // The ring thread creates the ring: with IORING_SETUP_SINGLE_ISSUER only
  // the creating thread may submit.
  std::future<bool> created = created_.get_future();
  thread_ = std::thread([this] {
    // Signals belong to the main thread (libfuse's exit handlers).
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    bool ok = setup_ring();
    created_.set_value(ok);
    if (!ok) return;
    go_.get_future().wait();
    if (!stopping_.load()) run();
  });
  if (!created.get()) {
    thread_.join();
    return -EINVAL;
  }
  return 0;
}

int FuseRing::start() {
  std::future<int> registered = registered_.get_future();
  go_.set_value();
  return registered.get();
}

bool FuseRing::setup_ring() {
  io_uring_params params{};
  // SQE128: the FUSE command lives in the SQE's extra 64 bytes. One thread
  // submits; task work waits until that thread enters the kernel anyway.
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
                 IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_CQSIZE;
  params.cq_entries = 2 * (shape_.entries + 1);
  int rc = io_uring_queue_init_params(shape_.entries + 1, &ring_, &params);
  if (rc != 0) {
    log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) + ": io_uring_setup: " + std::strerror(-rc));
    return false;
  }
  ring_ready_ = true;
  rc = io_uring_register_files(&ring_, &fuse_fd_, 1);
  if (rc != 0) {
    log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) + ": registering /dev/fuse: " + std::strerror(-rc));
    return false;
  }
  return true;
}

void FuseRing::quiesce() {
  // A Dekker pair with on_completion(): either the ring thread sees the
  // flag before it starts a request, or this thread sees it running and
  // waits for it to end (its data IO is then counted by the daemon).
  quiescing_.store(true);
  while (in_request_.load()) in_request_.wait(true);
}

void FuseRing::stop() {
  if (thread_.joinable()) {
    stopping_.store(true);
    try {
      go_.set_value();  // a ring prepared but never started
    } catch (const std::future_error&) {
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (ring_ready_) {
    io_uring_queue_exit(&ring_);
    ring_ready_ = false;
  }
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

io_uring_sqe* FuseRing::next_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // Full: every entry can have one command in flight, so this only
    // happens between submits; push what is queued and take the next.
    int rc = io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      // The command is lost and its request waits until unmount: say so.
      log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) +
                        ": submission queue full, submit: " + std::strerror(rc < 0 ? -rc : EBUSY));
    }
  }
  return sqe;
}

namespace {

void prep_fuse_cmd(io_uring_sqe* sqe, uint32_t cmd_op, uint16_t qid, uint64_t commit_id) {
  std::memset(sqe, 0, 128);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->flags = IOSQE_FIXED_FILE;
  sqe->fd = 0;  // index of /dev/fuse among the registered files
  sqe->cmd_op = cmd_op;
  wire::UringCmdReq req{};
  req.qid = qid;
  req.commit_id = commit_id;
  std::memcpy(sqe->cmd, &req, sizeof req);
}

}  // namespace

void FuseRing::queue_register(uint32_t e) {
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) return;
  prep_fuse_cmd(sqe, wire::kUringCmdRegister, shape_.qid, 0);
  sqe->addr = reinterpret_cast<uint64_t>(&register_iov_[2 * e]);
  sqe->len = 2;
  io_uring_sqe_set_data64(sqe, e);
}

void FuseRing::queue_commit(uint32_t e) {
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) return;
  prep_fuse_cmd(sqe, wire::kUringCmdCommitAndFetch, shape_.qid, unique_[e]);
  io_uring_sqe_set_data64(sqe, e);
}

void FuseRing::arm_wake() {
  io_uring_sqe* sqe = next_sqe();
  if (sqe == nullptr) return;
  io_uring_prep_read(sqe, wake_fd_, &wake_value_, sizeof wake_value_, 0);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

void FuseRing::send_queued_replies() {
  take_commits();
  io_uring_submit(&ring_);
}

void FuseRing::take_commits() {
  for (uint32_t e : local_commits_) queue_commit(e);
  local_commits_.clear();
  remote_->take_all([this](uint32_t e) {
    if (direct_entry_[e] == 0) ++round_handed_back_;
    queue_commit(e);
  });
}

ssize_t FuseRing::reply(uint32_t entry, const iovec* iov, int count) {
  if (entry >= shape_.entries || count < 1 || iov[0].iov_len < sizeof(wire::OutHeader)) return -EINVAL;
  wire::OutHeader out;
  std::memcpy(&out, iov[0].iov_base, sizeof out);
  size_t taken = iov[0].iov_len;
  size_t payload_bytes = 0;
  const size_t room = payload_room();
  for (int i = 1; i < count; ++i) {
    taken += iov[i].iov_len;
    if (payload_bytes + iov[i].iov_len > room) {
      out.error = -EIO;  // cannot happen for replies within max_read/max_write
      payload_bytes = 0;
      break;
    }
    // memmove: a reply may come from the request's own payload.
    std::byte* to = payload(entry) + payload_bytes;
    if (iov[i].iov_base != to) std::memmove(to, iov[i].iov_base, iov[i].iov_len);
    payload_bytes += iov[i].iov_len;
  }
  commit_reply(entry, out.error, payload_bytes);
  return static_cast<ssize_t>(taken);
}

void FuseRing::reply_payload(uint32_t entry, int error, const void* data, size_t n) {
  if (entry >= shape_.entries) return;  // no request to answer: never expected
  // The kernel takes an error outside 1..4095 for a broken reply: a bug of
  // ours, which the caller should hear about as EIO, not as EINVAL.
  if (n > payload_room() || error < 0 || error >= 4096) {
    if (!logged_bad_reply_.exchange(true)) {
      log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) + ": a reply of " + std::to_string(n) +
                        " bytes with error " + std::to_string(error) + " cannot be sent: answered EIO");
    }
    error = EIO;
    n = 0;
  }
  if (n != 0 && data != payload(entry)) std::memmove(payload(entry), data, n);
  commit_reply(entry, -error, n);
}

void FuseRing::commit_reply(uint32_t entry, int32_t error, size_t payload_bytes) {
  auto* header = reinterpret_cast<wire::UringReqHeader*>(entry_base(entry));
  wire::OutHeader out{static_cast<uint32_t>(sizeof(wire::OutHeader) + payload_bytes), error, unique_[entry]};
  std::memcpy(header->in_out, &out, sizeof out);
  header->ring_ent_in_out.payload_sz = static_cast<uint32_t>(payload_bytes);
  // Made on the ring's own thread: committed without the hand-over.
  if (pthread_equal(pthread_self(), ring_thread_.load(std::memory_order_relaxed))) {
    local_commits_.push_back(entry);
    ++round_answered_;
  } else if (remote_->push(entry)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
}

void FuseRing::commit_error(uint32_t e, int err) { commit_reply(e, -err, 0); }

void FuseRing::run_entry(uint32_t e) {
  const auto* header = reinterpret_cast<const wire::UringReqHeader*>(entry_base(e));
  wire::InHeader in;
  std::memcpy(&in, header->in_out, sizeof in);
  const uint32_t payload_sz = header->ring_ent_in_out.payload_sz;
  unique_[e] = in.unique;
  // The kernel puts the first argument in op_in and the rest in the
  // payload; len still counts them all, so the op header's size is what
  // remains.
  const size_t room = payload_room();
  if (in.len < sizeof in + size_t{payload_sz} || payload_sz > room ||
      in.len - sizeof in - payload_sz > wire::kUringOpInOutBytes) {
    if (!logged_error_) {
      logged_error_ = true;
      log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) + ": malformed request (opcode " +
                        std::to_string(in.opcode) + ", len " + std::to_string(in.len) + ", payload " +
                        std::to_string(payload_sz) + "): answered EIO");
    }
    commit_error(e, EIO);
    return;
  }
  const size_t op_bytes = in.len - sizeof in - payload_sz;
  const bool direct = direct_data(in, header->op_in, op_bytes);
  direct_entry_[e] = direct ? 1 : 0;
  if (direct) round_direct_data_ = true;
  // Only this thread writes them: no read-modify-write needed.
  served_.store(served_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (owner_.run_data_request(*this, e, in, header->op_in, op_bytes, payload_sz)) {
    data_run_.store(data_run_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  std::byte* start = payload(e) - op_bytes - sizeof in;
  in.unique = unique_token(e);
  std::memcpy(start, &in, sizeof in);
  std::memcpy(start + sizeof in, header->op_in, op_bytes);
  fuse_buf buf{};
  buf.size = in.len;
  buf.mem = start;
  owner_.run_request(*this, e, buf);
}

void FuseRing::on_completion(uint64_t tag, int res) {
  if (tag == kWakeTag) {
    if (!stopping_.load()) arm_wake();
    return;
  }
  auto e = static_cast<uint32_t>(tag);
  if (res == 0) {
    ++round_requests_;
    in_request_.store(true);
    if (!quiescing_.load()) run_entry(e);
    in_request_.store(false);
    in_request_.notify_all();
    return;
  }
  // -ENOTCONN / -ECANCELED: the connection or ring is going away; the
  // entry is the kernel's again. Anything else is worth one log line.
  if (res != -ENOTCONN && res != -ECANCELED && !logged_error_) {
    logged_error_ = true;
    log_(LOG_ERR,
         "FUSE ring " + std::to_string(shape_.qid) + ": entry " + std::to_string(e) + ": " + std::strerror(-res));
  }
}

bool FuseRing::has_work(const void* ring) {
  const auto* self = static_cast<const FuseRing*>(ring);
  return self->request_ready() || self->remote_->has_pushed();
}

bool FuseRing::request_ready() const {
  // IORING_SETUP_COOP_TASKRUN: a request the kernel has for this ring is
  // posted only when the thread next enters the kernel; TASKRUN_FLAG marks
  // that something is waiting to be posted.
  const unsigned sq_flags = IO_URING_READ_ONCE(*ring_.sq.kflags);
  return io_uring_cq_ready(&ring_) != 0 || (sq_flags & IORING_SQ_TASKRUN) != 0;
}

unsigned FuseRing::run_ready_completions() {
  unsigned n = 0;
  io_uring_cqe* cqe = nullptr;
  // One at a time: running a request can take long, and the CQ slot is
  // freed before it runs.
  while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
    uint64_t tag = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    on_completion(tag, res);
    ++n;
  }
  return n;
}

int FuseRing::register_entries() {
  for (uint32_t e = 0; e < shape_.entries; ++e) queue_register(e);
  arm_wake();
  int rc = io_uring_submit(&ring_);
  if (rc < 0) return rc;
  // The kernel registers an entry as the command is submitted; a refusal
  // (-EOPNOTSUPP with enable_uring off, -EINVAL for a bad buffer) is
  // already in the completion queue. Left there for the loop to see.
  unsigned head = 0;
  unsigned refused = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    if (io_uring_cqe_get_data64(cqe) != kWakeTag && cqe->res < 0) {
      ++refused;
      rc = cqe->res;
    }
  }
  // One refusal and the kernel serves this connection over /dev/fuse.
  return refused == 0 ? 0 : rc;
}

void FuseRing::pin_to_queue_cpu(bool pin) {
  if (!pin) {
    if (CPU_COUNT(&unpinned_cpus_) != 0) pthread_setaffinity_np(pthread_self(), sizeof unpinned_cpus_, &unpinned_cpus_);
    return;
  }
  // Only within the CPUs the daemon may use (when they are known); outside
  // them the thread stays where it is.
  if (CPU_COUNT(&unpinned_cpus_) != 0 && !CPU_ISSET(shape_.qid, &unpinned_cpus_)) return;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(shape_.qid, &cpus);
  // A CPU that is possible but offline cannot take the thread: it then
  // runs unpinned, and its queue only sees requests if the CPU comes up.
  pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
}

void FuseRing::yield_reply() {
  ReplyYield::Outcome outcome =
      yield_.submit_idle([](void* ring) { io_uring_submit(static_cast<io_uring*>(ring)); }, &ring_);
  if (outcome == ReplyYield::Outcome::not_lowered) return;
  yielded_.store(yielded_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (outcome == ReplyYield::Outcome::stalled) {
    yield_stalls_.store(yield_stalls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!logged_yield_stall_) {
      logged_yield_stall_ = true;
      log_(LOG_NOTICE, "FUSE ring " + std::to_string(shape_.qid) +
                           ": a reply sent at SCHED_IDLE waited over 1 ms for its CPU; this ring sends "
                           "lone replies at its own policy for a while after each such wait, longer "
                           "if they recur (said once; counted in ring_yield_stalls)");
    }
  } else if (outcome == ReplyYield::Outcome::stuck) {
    log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) +
                      ": cannot put the thread's scheduling policy back after SCHED_IDLE; fuse.ring_yield_ns "
                      "is off for this ring, which stays at SCHED_IDLE");
  }
}

void FuseRing::run() {
  // Unknown (more CPUs than a cpu_set_t holds): empty, so that pinning is
  // still tried, and letting go is not (it would fail on an empty set).
  if (pthread_getaffinity_np(pthread_self(), sizeof unpinned_cpus_, &unpinned_cpus_) != 0) CPU_ZERO(&unpinned_cpus_);
  if (shape_.placement == Shape::Placement::pinned) pin_to_queue_cpu(true);
  yield_.start_on_this_thread(shape_.yield_ns != 0);
  std::string name = "pg-ring" + std::to_string(shape_.qid);
  pthread_setname_np(pthread_self(), name.c_str());
  ring_thread_.store(pthread_self(), std::memory_order_relaxed);

  int rc = register_entries();
  registered_.set_value(rc);
  if (rc < 0) return;
  owner_.ring_thread_started(*this);
  for (;;) {
    take_commits();
    if (stopping_.load()) {
      owner_.ring_idle(*this);  // nothing may stay staged on a thread that ends
      take_commits();
      break;
    }
    // Commits wait in the SQ until the completion queue runs dry: the next
    // requests for those entries could not run sooner on this thread anyway.
    if (run_ready_completions() > 0) continue;
    // Nothing more ready: hand the batch to the drive threads now, so one
    // batch spans every request that arrived together.
    owner_.ring_idle(*this);
    take_commits();
    if (!remote_->prepare_sleep()) continue;
    if (stopping_.load()) {
      remote_->awake();
      continue;
    }
    if (shape_.placement == Shape::Placement::adaptive && round_requests_ != 0) {
      const uint64_t now = monotonic_ns();
      last_busy_round_ns_.store(now, std::memory_order_relaxed);
      // A lone caller at depth, in direct reads or writes (the program does
      // not wait for each); asked only then. Page-cache writebacks come in
      // batches too, between requests an unpacking program waits for.
      const bool alone = round_direct_data_ && round_requests_ >= RingPlacement::kHeavyRound &&
                         owner_.only_ring_busy_since(*this, now > kOthersBusyNs ? now - kOthersBusyNs : 0);
      RingPlacement::Change change = placement_.after_round(round_requests_, round_answered_, alone);
      if (change != RingPlacement::Change::none) pin_to_queue_cpu(change == RingPlacement::Change::pin);
    }
    // Replies made here, or by another thread for a request run here (a
    // blocking-op thread's fsync or truncate, a page-cache store), sent on
    // the CPU their callers sent them from: a caller waiting for one costs
    // less on this CPU than a halted CPU's wake-up (reply_yield.h). Direct
    // reads and writes only when alone, answered soon after the wake-up
    // and with no member IO outstanding; every other kind of round (names,
    // attributes, page-cache IO) whatever its length, and while the
    // members write back what was answered before.
    if (shape_.yield_ns != 0 && round_answered_ + round_handed_back_ != 0) {
      const uint64_t now = monotonic_ns();
      const bool may = !round_direct_data_ || (round_requests_ == 1 && round_answered_ == 1 &&
                                               now - woke_ns_ <= shape_.yield_ns && owner_.background_idle());
      if (may && yield_.usable(now) && sched_getcpu() == shape_.qid) yield_reply();
    }
    // A run of rounds of one direct read or write each: a program waiting
    // for each of its IOs, doing little in between. A look that found a
    // request but a round that ran none ends it (nothing is looked for
    // again until requests come one at a time once more).
    if (round_requests_ == 1 && round_direct_data_) {
      if (lone_rounds_ < kLoneRoundsToSpin) ++lone_rounds_;
    } else if (round_requests_ != 0 || look_found_) {
      lone_rounds_ = 0;
    }
    look_found_ = false;
    round_requests_ = 0;
    round_answered_ = 0;
    round_handed_back_ = 0;
    round_direct_data_ = false;
    // After a run of rounds of one direct read or write each (O_DIRECT, or
    // fuse.cache = direct), looks for the next request a while before
    // sleeping, as a classic worker does (read_spin.h; one ring at a
    // time): a program making one IO after another then wakes nobody. At
    // depth it would only take the CPU from the program and the other
    // rings (looking after every round of one to three, QD 32 reads lost
    // 20%, two jobs at QD 16 10%), and after names, attributes and
    // page-cache IO it takes turns with a caller that works on each answer
    // on this CPU (a reply sent at SCHED_IDLE wakes it here: a walk of a
    // tree took 2-5% longer). Between looks the CPU goes to whatever else
    // is ready on it. A request shows as a completion or, held back by
    // COOP_TASKRUN until the thread enters the kernel, as the ring's
    // IORING_SQ_TASKRUN flag (io_uring_get_events() posts it; the
    // sched_yield() may already have). A reply another thread pushes
    // meanwhile ends the look too, uncounted: the thread is awake for the
    // look, so the pusher writes no eventfd.
    uint64_t looked_from = 0;
    ReadSpin* const spin = shape_.spin;
    if (lone_rounds_ >= kLoneRoundsToSpin && spin != nullptr && spin->try_begin()) {
      remote_->awake();
      io_uring_submit(&ring_);
      const uint64_t start = monotonic_ns();
      const uint64_t window = spin->window_ns();
      bool request = request_ready();
      bool reply = !request && remote_->has_pushed();
      while (!request && !reply && monotonic_ns() - start < window) {
        sched_yield();
        request = request_ready();
        reply = !request && remote_->has_pushed();
      }
      if (request) {
        spin->found();
        look_found_ = true;
        if (shape_.yield_ns != 0) woke_ns_ = monotonic_ns();
        io_uring_get_events(&ring_);
        continue;
      }
      if (reply || !remote_->prepare_sleep()) {
        spin->let_go();
        continue;
      }
      spin->missed();
      looked_from = start;
    }
    rc = io_uring_submit_and_wait(&ring_, 1);
    if (looked_from != 0) spin->adapt(monotonic_ns() - looked_from);
    if (shape_.yield_ns != 0) woke_ns_ = monotonic_ns();
    remote_->awake();
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      // Nothing this thread can do would make the next call succeed.
      log_(LOG_ERR, "FUSE ring " + std::to_string(shape_.qid) + ": io_uring_enter: " + std::strerror(-rc) +
                        "; the ring stops serving");
      break;
    }
  }
  io_uring_submit(&ring_);
  ring_thread_.store(pthread_t{}, std::memory_order_relaxed);
}

}  // namespace peregrine::fs
