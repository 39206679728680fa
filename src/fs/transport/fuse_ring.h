// FuseRing: one kernel FUSE queue served over io_uring (the io-uring
// transport has one per possible CPU). It owns an io_uring created with
// 128-byte SQEs, the queue's entries (a header buffer and a payload buffer
// each, registered with the kernel by FUSE_IO_URING_CMD_REGISTER) and the
// thread that serves them (pinned to the queue's CPU only if asked): the
// design's submitting thread for every request the kernel puts on this
// queue.
//
// Memory: entry e is one stride of [4 KiB page | payload]. The page holds
// the kernel's header buffer at its start and, for a request libfuse runs,
// at its end the copy of the request's fuse_in_header and op header that
// makes [headers | payload] one contiguous request, so its arguments are
// used where the kernel put them. READ and WRITE the owner runs itself
// (run_data_request) use the payload directly. Payloads are reserved
// address space, touched only as far as used.
//
// Loop: run every request the completion queue has ready (each may stage
// IO); when none is left, hand the staged IO to the drive threads (one
// batch for everything that arrived together), then submit every commit
// and wait, in one io_uring_enter (a lone reply made here is submitted
// first, at SCHED_IDLE: reply_yield.h; after a run of lone direct IOs the
// thread first looks for the next request a while: read_spin.h).
//
// Thread rules: start(), quiesce() and stop() from the daemon's main thread.
// The ring thread alone touches the io_uring and runs requests. reply() is
// for any thread while the entry's request is unanswered: the entry then
// belongs to the replier; the reply is committed on the ring thread, handed
// over through a lock-free stack (no lock, and an eventfd write only when
// the ring thread sleeps).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <sched.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commit_stack.h"
#include "fuse_wire.h"
#include "peregrine/fs/read_spin.h"
#include "reply_yield.h"
#include "ring_placement.h"
#include "transport.h"

namespace peregrine::fs {

class FuseRing {
 public:
  // What a ring asks of the transport that owns it.
  class Owner {
   public:
    // Runs one request (ring thread). `buf` is the whole request, its
    // unique replaced by the ring's token for the entry (unique_token()).
    virtual void run_request(FuseRing& ring, uint32_t entry, const fuse_buf& buf) = 0;
    // Runs a READ or WRITE itself (ring thread), answered through
    // reply_payload(); false: not one it runs, run_request() takes it.
    // `op_in` holds the opcode's first argument (`op_bytes`), the entry's
    // payload (payload_of()) the rest, `payload_sz` bytes.
    virtual bool run_data_request(FuseRing& ring, uint32_t entry, const wire::InHeader& in, const void* op_in,
                                  size_t op_bytes, uint32_t payload_sz) = 0;
    // The ring has run every request that was ready (ring thread): hand the
    // IO they staged to the drive threads before the thread can sleep.
    virtual void ring_idle(FuseRing& ring) = 0;
    // On the ring thread, once its entries are registered, before it
    // serves: it may wait for member IO here while has_work() is false.
    virtual void ring_thread_started(FuseRing&) {}
    // Whether no other thread of the daemon may want the ring thread's CPU
    // (reply_yield.h). Any thread; a snapshot.
    virtual bool background_idle() const { return true; }
    // Whether no ring but `ring` ran a round with requests since `since_ns`
    // (monotonic): no other caller keeps a CPU busy with requests
    // (ring_placement.h). Ring thread; a snapshot.
    virtual bool only_ring_busy_since(const FuseRing& ring, uint64_t since_ns) const {
      (void)ring;
      (void)since_ns;
      return false;
    }

   protected:
    ~Owner() = default;
  };

  struct Shape {
    uint16_t qid = 0;          // kernel queue = CPU
    uint32_t entries = 0;      // requests in flight on this queue
    size_t payload_bytes = 0;  // >= the kernel's max payload (page multiple)
    // Where the thread runs (fuse.pin_rings): on CPU qid always, or on
    // CPU qid only while its requests come one at a time (ring_placement.h).
    enum class Placement { pinned, adaptive };
    Placement placement = Placement::adaptive;
    // fuse.ring_yield_ns where ReplyYield::permitted(), else 0: a lone
    // reply made on the queue's CPU within this long of the thread's
    // wake-up is sent at SCHED_IDLE (reply_yield.h).
    uint32_t yield_ns = 0;
    // The session's look for the next request before sleeping, shared by
    // every ring, one looking at a time (read_spin.h); nullptr: never.
    ReadSpin* spin = nullptr;
  };

  FuseRing(Owner& owner, int fuse_fd, Shape shape, LogLine log);
  ~FuseRing();
  FuseRing(const FuseRing&) = delete;
  FuseRing& operator=(const FuseRing&) = delete;

  // Creates the buffers and the thread, which creates the ring (before
  // INIT is answered: a daemon that cannot must not ask for io_uring, or
  // the kernel would hold every request for rings that never come).
  // Returns 0 or a negative errno (then nothing is left running).
  int prepare();
  // After INIT's reply: the thread registers every entry and serves;
  // returns once they are registered (the kernel takes a registration as it
  // is submitted; a refused one turns io_uring off for the connection).
  int start();
  // Runs no request that arrives from now on (they stay unanswered until
  // the kernel aborts them at unmount); returns once a request the thread
  // was running has ended.
  void quiesce();
  // Commits what is queued, then ends the thread and closes the ring.
  void stop();

  // The unique libfuse sees for an entry's request: replies to it come back
  // through reply(). Bit 63 is never set in the kernel's own uniques.
  static constexpr uint64_t kTokenBit = uint64_t{1} << 63;
  // The kernel's unique of the request `entry` holds, until it is answered
  // (the header handed on carries the token instead).
  uint64_t kernel_unique(uint32_t entry) const { return unique_[entry]; }
  uint64_t unique_token(uint32_t entry) const { return kTokenBit | (uint64_t{shape_.qid} << 32) | entry; }
  static bool is_token(uint64_t unique) { return (unique & kTokenBit) != 0; }
  static uint16_t token_qid(uint64_t unique) { return static_cast<uint16_t>((unique >> 32) & 0xffff); }
  static uint32_t token_entry(uint64_t unique) { return static_cast<uint32_t>(unique); }
  // When the thread last finished a round that ran requests (monotonic ns;
  // 0: never). Any thread, relaxed: a hint for the other rings' placement.
  uint64_t last_busy_round_ns() const { return last_busy_round_ns_.load(std::memory_order_relaxed); }
  // Whether the request the thread is running is the only one of its round
  // so far, no other has reached the ring since, and no other thread has
  // pushed a reply for it meanwhile. (Replies other threads will make for
  // this ring's requests still in flight elsewhere can come while the
  // request runs, and wait for it.) Ring thread only, inside a request.
  bool alone_in_round() const { return round_requests_ == 1 && !request_ready() && !remote_->has_pushed(); }
  // Sends every reply the thread has queued (its own and those taken from
  // other threads), before it runs something that may wait. Ring thread
  // only.
  void send_queued_replies();

  // Stores a reply (fuse_out_header + arguments, as libfuse writes it) in
  // the entry's buffers and commits it. Any thread. Returns the bytes taken.
  ssize_t reply(uint32_t entry, const iovec* iov, int count);
  // Answers the entry's request with `error` (0 or a positive errno) and
  // `n` bytes from `data` (nothing is moved if they are at the start of the
  // entry's payload already), and commits it. Any thread; once per request.
  void reply_payload(uint32_t entry, int error, const void* data, size_t n);

  // The entry's payload buffer (4 KiB aligned, payload_capacity() bytes):
  // the request's data, then its reply's, until it is answered.
  std::byte* payload_of(uint32_t entry) const { return payload(entry); }
  size_t payload_capacity() const { return payload_room(); }

  // Ring thread: whether requests or replies wait for it (a request in the
  // completion queue or about to be posted there, a reply from another
  // thread to commit). For a thread that polls for member IO on its way to
  // answer a lone request: it stops when this says there is more to do.
  static bool has_work(const void* ring);

  // Ring thread: what the host keeps for this thread (data_calls.h),
  // set once as it starts.
  HostThread* host_thread() const { return host_thread_; }
  void set_host_thread(HostThread* t) { host_thread_ = t; }

  uint16_t qid() const { return shape_.qid; }
  uint32_t entries() const { return shape_.entries; }
  uint64_t requests_served() const { return served_.load(std::memory_order_relaxed); }
  uint64_t data_requests_run() const { return data_run_.load(std::memory_order_relaxed); }
  uint64_t yielded_replies() const { return yielded_.load(std::memory_order_relaxed); }
  uint64_t yield_stalls() const { return yield_stalls_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kWakeTag = UINT64_MAX;
  static constexpr size_t kHeaderPage = 4096;
  // Another ring that ran a round this recently has a caller of its own
  // (ring_placement.h): long beside rounds of microseconds, short beside a
  // program's moves between CPUs.
  static constexpr uint64_t kOthersBusyNs = 2'000'000;
  // Rounds of one direct read or write in a row before the thread looks
  // for the next request before sleeping (read_spin.h).
  static constexpr uint32_t kLoneRoundsToSpin = 8;

  std::byte* entry_base(uint32_t e) const { return area_ + size_t{e} * stride_; }
  std::byte* payload(uint32_t e) const { return entry_base(e) + kHeaderPage; }
  size_t payload_room() const { return stride_ - kHeaderPage; }

  void run();
  // A request in the completion queue or about to be posted there (has_work()
  // without the replies of other threads). Ring thread.
  bool request_ready() const;
  int register_entries();
  bool setup_ring();
  io_uring_sqe* next_sqe();
  void queue_register(uint32_t e);
  void queue_commit(uint32_t e);
  void arm_wake();
  void take_commits();
  unsigned run_ready_completions();
  void on_completion(uint64_t tag, int res);
  void run_entry(uint32_t e);
  void commit_error(uint32_t e, int err);
  // The out header for `payload_bytes` of reply already in the payload,
  // then the commit (on this thread's list, or handed to the ring thread).
  void commit_reply(uint32_t e, int32_t error, size_t payload_bytes);
  void pin_to_queue_cpu(bool pin);
  // Submits the commits with the thread at SCHED_IDLE (reply_yield.h).
  void yield_reply();

  Owner& owner_;
  const int fuse_fd_;
  const Shape shape_;
  LogLine log_;
  size_t stride_ = 0;
  size_t area_bytes_ = 0;
  std::byte* area_ = nullptr;
  io_uring ring_{};
  bool ring_ready_ = false;
  int wake_fd_ = -1;
  uint64_t wake_value_ = 0;        // the eventfd read's buffer (ring thread)
  iovec* register_iov_ = nullptr;  // two per entry, alive while registered

  // The kernel's unique of each entry's request: written by the ring
  // thread; also read, through kernel_unique(), by a blocking-op thread
  // running the request (the hand-over's lock orders the two).
  std::vector<uint64_t> unique_;
  // The ring thread, once it runs (a reply made on it needs no hand-over);
  // read by any replier. A replier on another thread never sees its own
  // id here, whether it reads the value before or after the store.
  std::atomic<pthread_t> ring_thread_{};
  // Ring thread only.
  HostThread* host_thread_ = nullptr;
  std::vector<uint32_t> local_commits_;
  bool logged_error_ = false;
  RingPlacement placement_;
  ReplyYield yield_;
  bool logged_yield_stall_ = false;
  uint64_t woke_ns_ = 0;         // when the thread last came back from waiting
  std::atomic<uint64_t> last_busy_round_ns_{0};
  uint32_t lone_rounds_ = 0;  // rounds of one direct IO in a row, up to kLoneRoundsToSpin
  bool look_found_ = false;   // the last look before sleeping found a request
  uint32_t round_requests_ = 0;  // requests run since the thread last slept
  uint32_t round_answered_ = 0;  // replies made on the thread since then
  // Replies other threads made for this thread's requests (a blocking-op
  // thread's fsync, a page-cache store), committed since then; not those
  // of direct data, which yield only as round_direct_data_'s rule says.
  uint32_t round_handed_back_ = 0;
  std::vector<uint8_t> direct_entry_;  // whether each entry's request is direct data (direct_data())
  bool round_direct_data_ = false;  // one of those requests was direct data (direct_data())
  cpu_set_t unpinned_cpus_{};    // the thread's CPUs as started (cpusets, taskset)

  // Replies from other threads.
  std::unique_ptr<CommitStack> remote_;
  std::atomic<bool> quiescing_{false};
  std::atomic<bool> in_request_{false};  // the ring thread is running one (quiesce waits)
  std::atomic<bool> stopping_{false};
  // prepare() -> thread: ring created (or not); start() -> thread: go on
  // and register; thread -> start(): registered (or why not).
  std::promise<bool> created_;
  std::promise<void> go_;
  std::promise<int> registered_;
  std::atomic<uint64_t> served_{0};
  std::atomic<uint64_t> data_run_{0};      // of them, run_data_request() took
  std::atomic<uint64_t> yielded_{0};       // replies sent at SCHED_IDLE (reply_yield.h)
  std::atomic<uint64_t> yield_stalls_{0};  // of them, ones that waited over kStallNs
  std::atomic<bool> logged_bad_reply_{false};
  std::thread thread_;
};

}  // namespace peregrine::fs
