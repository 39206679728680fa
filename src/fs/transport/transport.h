// Transport: how FUSE requests reach the daemon's operation table and how
// the replies go back (docs/transport.md). Two of them share this interface:
//   classic  - libfuse 3.14's multi-threaded loop: fuse.workers threads each
//              read() a request from their cloned /dev/fuse descriptor and
//              writev() its reply, through the batching request reader;
//   io-uring - FUSE over io_uring (kernel 6.14+): one ring per kernel queue
//              (one per possible CPU), each served by a thread of its own
//              that runs the requests, stages their IO and commits the
//              replies; /dev/fuse still carries INIT, FORGET, INTERRUPT and
//              whatever arrives before every ring is registered.
// Both own INIT's reply so they can ask for what libfuse 3.14 cannot
// (FUSE_DIRECT_IO_ALLOW_MMAP, FUSE_OVER_IO_URING, FUSE_HANDLE_KILLPRIV_V2),
// both mark direct-IO opens FOPEN_PARALLEL_DIRECT_WRITES, and both hand
// operations what libfuse 3.14 drops from requests (request_marks.h). The
// io-uring transport hands READ and WRITE to the host itself, as calls
// (data_calls.h), without libfuse. Those calls and the marks are the
// transport's contract, so they live here, below the filesystem that
// implements the host: the transport includes nothing from src/fs.
//
// Thread rules: the daemon's main thread creates the transport, installs it
// after fuse_session_mount(), calls serve() (which returns when the session
// ends), then quiesce(), then stop(). status() is safe from any thread.
// The /dev/fuse hooks run on libfuse's workers; replies may be sent from any
// thread (FUSE workers, ring threads, drive threads).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "data_calls.h"
#include "peregrine/config/settings.h"
#include "peregrine/fs/read_spin.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/result.h"

namespace peregrine::fs {

class Transport;

// What a transport needs from the filesystem it serves (FsContext for the
// daemon; the do-nothing FUSE file of tools/bench/fuse for the ceiling).
// The session's userdata (fuse_session_new) must be the TransportHost:
// the transport's hooks find it there.
//
// Thread rules: transport_limits() is read once at start; read_request()
// runs on libfuse workers, the staging calls on the transport's threads.
class TransportHost {
 public:
  struct Limits {
    unsigned workers = 2;                              // libfuse workers; also blocking-op threads
    unsigned ring_depth = 128;                         // io-uring entries per ring
    size_t max_request_bytes = 1u << 20;               // max_write / max_read
    bool pin_rings = false;                            // pin each ring thread to its queue's CPU
    uint64_t ring_memory_bytes = uint64_t{512} << 20;  // every ring's entries together (ring_budget.h)
    uint32_t ring_yield_ns = 1500;                     // SCHED_IDLE while committing a reply this quick
  };
  virtual Limits transport_limits() const = 0;
  // INIT flags (fuse_wire.h) the filesystem serves that libfuse 3.14
  // cannot ask for; the transport grants those the kernel offers.
  virtual uint64_t wanted_init_flags() const { return 0; }
  // Whether the writes of a direct-IO open (FOPEN_DIRECT_IO in its reply)
  // may run side by side on one file: the transport then adds
  // FOPEN_PARALLEL_DIRECT_WRITES to that reply, which libfuse 3.14's
  // fuse_file_info cannot carry.
  virtual bool parallel_direct_writes() const { return false; }
  // The session's one look for the next request before sleeping
  // (read_spin.h): the classic workers' or, on io-uring, the rings'.
  // nullptr: nobody looks.
  virtual ReadSpin* request_spin() { return nullptr; }
  // The session is mounted with this /dev/fuse descriptor (libfuse's own;
  // its workers read clones of it). Called by Transport::install().
  virtual void session_mounted(int /*session_fd*/) {}
  // Reads one request from a libfuse worker's /dev/fuse descriptor, and
  // says whether the IO that request stages may stay staged when it ends
  // (RequestMarks::may_stay_staged): the host's reader then hands it on.
  virtual ssize_t read_request(int fd, void* buf, size_t len, bool* may_stay_staged);
  // Hands on the IO `thread` staged (a ring thread's; null: the calling
  // thread's, one of libfuse's), before it may wait.
  virtual void hand_on_staged(HostThread* /*thread*/) {}
  // A ring thread, once before it serves: what the host keeps for it
  // (data_calls.h), passed back with its calls. IO it dispatches inline
  // on a quiet volume may be waited for on this thread
  // (engine.inline_poll_us), for no longer than until `more_work(ring)`
  // says requests wait for it.
  virtual HostThread* ring_thread_started(bool (* /*more_work*/)(const void*), const void* /*ring*/) {
    return nullptr;
  }
  // A ring thread between requests, holding no lock: hand staged IO on,
  // and complete on this thread what that dispatched inline and the member
  // finished at once (Submitter::Completions::here).
  virtual void unplug_between_requests(HostThread* /*thread*/) {}
  // Whether no thread of the host may want this CPU while a ring thread
  // sends a reply at SCHED_IDLE (fuse.ring_yield_ns): for the daemon, no
  // member IO outstanding (drive threads asleep). Any thread; a snapshot.
  virtual bool background_idle() const { return true; }
  // Whether an fsync of file `ino` would wait only for the members'
  // flushes, a little of the file's IO in flight and one small journal
  // batch. A ring thread then runs an FSYNC that is its only request itself
  // instead of handing it to a thread that may block (uring_transport.h).
  // Any thread; a snapshot: the state may change before the fsync runs.
  virtual bool fsync_is_short(uint64_t /*ino*/) const { return false; }
  // Whether the host serves READ and WRITE as calls (run_read/run_write);
  // if not, a ring hands them to libfuse like any other request.
  virtual bool runs_data_calls() const { return false; }
  // On the thread the request arrived on, which must not wait for member
  // IO; the call's DataReply answers it from any thread. A host that says
  // it runs calls overrides both.
  virtual void run_read(const ReadCall& call) { call.reply.error(ENOSYS); }
  virtual void run_write(const WriteCall& call) { call.reply.error(ENOSYS); }
  // A WRITE that is not whole blocks: run_write's rules, but the host may
  // decline (false, having done nothing) where serving it would wait; the
  // transport then hands it to a thread that may block.
  virtual bool try_run_write_without_waiting(const WriteCall&) { return false; }
  // A page-cache writeback (whole blocks, or cut at the end of the file):
  // served on the aligned path, or declined (false, having done nothing)
  // where that path would hand it to one that waits for other IO.
  virtual bool try_run_page_cache_write(const WriteCall&) { return false; }
  // A WRITE of whole blocks that is no page-cache writeback (O_DIRECT, or
  // fuse.cache=direct): served on the aligned path, or declined (false,
  // having done nothing) where that path would wait for the file's gate or
  // the write needs the exclusive path, whose member IO the thread would
  // wait for: with a member stalled, the ring would stop.
  virtual bool try_run_aligned_write(const WriteCall&) { return false; }

  Transport* transport = nullptr;  // set before the session serves

 protected:
  ~TransportHost() = default;
};

// Whether this kernel offers FUSE over io_uring, and if not, why (for the
// log line and the refusal). Reads the fuse module's enable_uring parameter;
// PEREGRINE_FUSE_URING_PARAM names another file to read instead (tests).
struct UringSupport {
  bool offered = false;
  std::string why_not;  // "" when offered
};
UringSupport probe_uring_support();

// The transport the settings ask for on this kernel, decided before the
// mount: io-uring or classic. Fails for fuse.transport = io-uring when the
// kernel does not offer it (the message says how to enable it).
struct TransportPlan {
  bool uring = false;
  std::string reason;  // why classic was chosen under auto ("" otherwise)
};
Expected<TransportPlan> plan_transport(config::FuseTransport wanted);

struct TransportStatus {
  std::string name;                     // "classic" or "io-uring"
  std::vector<uint64_t> ring_requests;  // io-uring: requests served per ring
  // io-uring: requests read from /dev/fuse once the rings were registered,
  // other than INIT, FORGET, BATCH_FORGET, INTERRUPT and DESTROY (which the
  // kernel always sends there). 0 while the rings carry everything.
  uint64_t dev_fuse_requests = 0;
  // io-uring: each ring's entries and the largest request one carries
  // (fuse.ring_memory_mib may have lowered both: ring_budget.h).
  uint32_t ring_entries = 0;
  uint64_t ring_request_bytes = 0;
  // io-uring: READs and WRITEs the rings decoded and handed to the host
  // themselves (the rest of ring_requests went through libfuse).
  uint64_t ring_data_requests = 0;
  // io-uring: lone replies sent at SCHED_IDLE (fuse.ring_yield_ns), and
  // those that waited over a millisecond for the CPU (reply_yield.h).
  uint64_t ring_yielded_replies = 0;
  uint64_t ring_yield_stalls = 0;
  // FSYNCs a ring thread ran itself (short, nothing else waiting).
  uint64_t ring_inline_fsyncs = 0;
};

class Transport {
 public:
  // `serving` is called once the transport carries requests: for io-uring,
  // once INIT is answered and every ring is registered (or the kernel
  // declined and /dev/fuse carries everything). Never for classic, which
  // serves as soon as its loop runs. Any thread; at most once.
  static std::unique_ptr<Transport> create(TransportHost& host, const TransportPlan& plan, LogLine log,
                                           std::function<void()> serving);
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // After fuse_session_mount(): routes the session's /dev/fuse IO through
  // the transport. Returns 0 or a negative errno.
  virtual int install(fuse_session* se) = 0;
  // Serves requests until the session ends (unmount, signal, error);
  // returns libfuse's loop result.
  virtual int serve(fuse_session* se, fuse_loop_config* cfg) = 0;
  // The session has ended: run no new request. Requests already running
  // finish and reply.
  virtual void quiesce() = 0;
  // Every reply is out (the daemon waited for its data ops): release the
  // transport's threads and rings. The session may be destroyed after this.
  virtual void stop() = 0;
  virtual TransportStatus status() const = 0;

 protected:
  Transport() = default;
};

}  // namespace peregrine::fs
