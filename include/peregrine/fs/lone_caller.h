// LoneCaller: whether one program thread alone is making metadata requests
// (ls -lR, find, du, stat), so that the classic workers read /dev/fuse one
// at a time for it (fuse.one_reader; read_turn.h, request_reader.h).
//
// Why: every worker asleep in read() is a wake-up the kernel spends on the
// next request. A program that waits for each reply gets its requests read
// by the worker that looks for them (read_spin.h), but each one also woke
// a sleeping worker, on a virtual machine often on a halted vCPU (10 us or
// more), to find nothing; and a request queued behind another (a close's
// RELEASE, then the next open) called a helper on the other CPU, whose
// reply moved the program there. With one reader and no helper for such a
// request, `ls -lR` of /usr/include on 4 member files on 2 vCPUs (AMD EPYC
// guest, guest_halt_poll_ns 0) took 1.15-1.26 s after a dropped cache
// instead of 1.21-2.25, and 0.62-0.66 s again instead of 0.76-1.03
// (docs/transport.md, "Light load").
//
// Alone: for kQuietNs, no READ or WRITE (their IO runs on the drive
// threads, and the one-reader turn's own rule covers it; an unpack
// followed through its page-cache writebacks measured no faster,
// docs/performance-history.md) and no request
// from a caller thread other than the last one: several callers need
// several workers. RELEASE and RELEASEDIR come with pid 0 (the kernel
// sends them without the closer's credentials) and count for nobody; any
// other request with pid 0 comes from a pid namespace the daemon does not
// see, where callers cannot be told apart, and ends the run. A program
// that starts after another ended is a second caller too: its first
// 100 ms go without.
//
// It also holds what the workers share about following the lone program
// (lone_caller_follow.h): whether the one reader follows it, when it last
// read a request, and the back-off after a waiting worker found it stalled.
//
// Thread rules: one per session, shared by the classic workers; every
// member is atomic. set_enabled() and set_may_follow() before the workers
// start.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace peregrine::fs {

class LoneCaller {
 public:
  static constexpr uint64_t kQuietNs = 100'000'000;

  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // After every request a worker read (the raw FUSE request), at now_ns.
  void note_request(const void* buf, size_t n, uint64_t now_ns);
  // Whether one caller alone has been making metadata requests.
  bool alone(uint64_t now_ns) const {
    return enabled() && now_ns > not_alone_ns_.load(std::memory_order_relaxed) + kQuietNs;
  }

  // Following. The following reader is stalled when a waiting worker's
  // look-out sees a request waiting at two looks kStalledNs apart with no
  // read by the reader between them; following then stops for a back-off
  // that doubles with each stall (up to kMaxBackOffNs) and halves with
  // each run that ends without one (down to kMinBackOffNs).
  static constexpr uint64_t kStalledNs = 5'000'000;
  static constexpr uint64_t kMinBackOffNs = 100'000'000;
  static constexpr uint64_t kMaxBackOffNs = 10'000'000'000;
  void set_may_follow(bool on) { may_follow_.store(on, std::memory_order_relaxed); }
  // Whether the reader may follow the lone program now.
  bool may_follow(uint64_t now_ns) const {
    return enabled() && may_follow_.load(std::memory_order_relaxed) &&
           now_ns >= follow_again_ns_.load(std::memory_order_relaxed);
  }
  // The following reader (thread `tid`) read a request at now_ns.
  void note_followed_read(uint32_t tid, uint64_t now_ns);
  // Reader `tid` stopped following at the end of a run (ignored if
  // another reader follows now).
  void note_not_following(uint32_t tid);
  bool following() const { return followed_read_ns_.load(std::memory_order_relaxed) != 0; }
  // The look-out's look: whether the following reader is stalled, given
  // whether a request waits now.
  bool follower_stalled(bool request_waiting);
  // Stops following for a back-off from now_ns; returns the stalled
  // reader's thread id (0 if none follows any more), for the caller to
  // put back and then report with put_back().
  uint32_t stop_stalled_follower(uint64_t now_ns);
  // The look-out's look found no request waiting: if the reader has read
  // nothing for idle_ns(), stops its follow (no back-off; a run that ends
  // so halves it) and returns its thread id for the caller to put back
  // and report, else 0.
  static constexpr uint64_t kIdleNs = kQuietNs;
  uint64_t idle_ns() const { return idle_ns_.load(std::memory_order_relaxed); }
  void set_idle_ns(uint64_t ns) { idle_ns_.store(ns, std::memory_order_relaxed); }  // tests
  uint32_t stop_idle_follower(uint64_t now_ns);
  // The look-out put a stopped reader back (`ok`): counted in stops(), so
  // that the reader knows at its next request. If it could not be put
  // back, following is turned off and the reader, which still believes it
  // is held, puts itself back (and retries) at its next request.
  void put_back(bool ok);
  // How many followers the look-out put back: a follower whose count
  // changed is held no longer.
  uint64_t stops() const { return stops_.load(std::memory_order_acquire); }
  // One waiting worker at a time looks out for a stalled reader.
  bool try_guard() { return !guarded_.exchange(true); }
  void end_guard() { guarded_.store(false); }
  // For tests and statistics.
  uint64_t follow_runs() const { return follow_runs_.load(std::memory_order_relaxed); }
  uint64_t follow_stalls() const { return follow_stalls_.load(std::memory_order_relaxed); }
  bool guarded() const { return guarded_.load(); }  // for tests

 private:
  std::atomic<bool> enabled_{false};
  // When a data request, another caller or an unnamed one last came.
  // Racing stores may put it back by the microseconds between them: a hint.
  std::atomic<uint64_t> not_alone_ns_{0};
  std::atomic<uint32_t> last_caller_{0};
  std::atomic<bool> may_follow_{false};
  std::atomic<uint64_t> followed_read_ns_{0};  // 0: not following
  std::atomic<uint32_t> follower_tid_{0};
  std::atomic<uint64_t> follow_again_ns_{0};
  std::atomic<uint64_t> back_off_ns_{kMinBackOffNs};
  std::atomic<bool> guarded_{false};
  std::atomic<uint64_t> waiting_seen_at_read_ns_{0};  // the look-out's last look that saw a request waiting
  std::atomic<uint64_t> follow_runs_{0};
  std::atomic<uint64_t> follow_stalls_{0};
  std::atomic<uint64_t> stops_{0};
  std::atomic<uint64_t> idle_ns_{kIdleNs};
};

}  // namespace peregrine::fs
