#include "peregrine/fs/lone_caller.h"

#include <linux/fuse.h>

#include <algorithm>
#include <cstring>

namespace peregrine::fs {
namespace {

// Requests no caller waits for, or the kernel's own: they say nothing about
// who the workers serve.
bool has_caller(uint32_t opcode) {
  switch (opcode) {
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
    case FUSE_INIT:
    case FUSE_DESTROY:
    case FUSE_NOTIFY_REPLY: return false;
    default: return true;
  }
}

}  // namespace

void LoneCaller::note_request(const void* buf, size_t n, uint64_t now_ns) {
  if (!enabled() || n < sizeof(fuse_in_header)) return;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof h);
  if (h.opcode == FUSE_READ || h.opcode == FUSE_WRITE) {
    not_alone_ns_.store(now_ns, std::memory_order_relaxed);
    return;
  }
  if (!has_caller(h.opcode)) return;
  if (h.pid == 0) {
    // The kernel sends RELEASE without the closer's credentials; anything
    // else with pid 0 comes from a pid namespace this daemon does not see,
    // where callers cannot be told apart.
    if (h.opcode != FUSE_RELEASE && h.opcode != FUSE_RELEASEDIR)
      not_alone_ns_.store(now_ns, std::memory_order_relaxed);
    return;
  }
  // Only a change is a store: one caller's stream of requests writes
  // nothing the workers share.
  if (last_caller_.load(std::memory_order_relaxed) == h.pid) return;
  if (last_caller_.exchange(h.pid, std::memory_order_relaxed) != 0)
    not_alone_ns_.store(now_ns, std::memory_order_relaxed);
}

void LoneCaller::note_followed_read(uint32_t tid, uint64_t now_ns) {
  if (follower_tid_.load(std::memory_order_relaxed) != tid) follower_tid_.store(tid, std::memory_order_relaxed);
  // Release: a look-out that sees this read sees the reader's thread id.
  if (followed_read_ns_.exchange(now_ns, std::memory_order_acq_rel) == 0)
    follow_runs_.fetch_add(1, std::memory_order_relaxed);
}

void LoneCaller::note_not_following(uint32_t tid) {
  // Another worker took the turn and follows: its run goes on. (A race
  // with its first read clears what its next read sets again.)
  if (follower_tid_.load(std::memory_order_relaxed) != tid) return;
  if (followed_read_ns_.exchange(0, std::memory_order_relaxed) == 0) return;
  const uint64_t b = back_off_ns_.load(std::memory_order_relaxed);
  back_off_ns_.store(std::max(b / 2, kMinBackOffNs), std::memory_order_relaxed);
}

bool LoneCaller::follower_stalled(bool request_waiting) {
  const uint64_t read_at = followed_read_ns_.load(std::memory_order_relaxed);
  if (read_at == 0 || !request_waiting) {
    waiting_seen_at_read_ns_.store(0, std::memory_order_relaxed);
    return false;
  }
  // A request waited at the last look too, and the reader read nothing
  // since: it has waited for the reader a whole look at least.
  return waiting_seen_at_read_ns_.exchange(read_at, std::memory_order_relaxed) == read_at;
}

uint32_t LoneCaller::stop_idle_follower(uint64_t now_ns) {
  const uint64_t read_at = followed_read_ns_.load(std::memory_order_acquire);
  if (read_at == 0 || now_ns < read_at + idle_ns()) return 0;
  // Only if the reader read nothing meanwhile.
  uint64_t expected = read_at;
  if (!followed_read_ns_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return 0;
  waiting_seen_at_read_ns_.store(0, std::memory_order_relaxed);
  const uint64_t b = back_off_ns_.load(std::memory_order_relaxed);
  back_off_ns_.store(std::max(b / 2, kMinBackOffNs), std::memory_order_relaxed);
  return follower_tid_.load(std::memory_order_relaxed);
}

uint32_t LoneCaller::stop_stalled_follower(uint64_t now_ns) {
  waiting_seen_at_read_ns_.store(0, std::memory_order_relaxed);
  if (followed_read_ns_.exchange(0, std::memory_order_acq_rel) == 0) return 0;
  follow_stalls_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t b = back_off_ns_.load(std::memory_order_relaxed);
  follow_again_ns_.store(now_ns + b, std::memory_order_relaxed);
  back_off_ns_.store(std::min(2 * b, kMaxBackOffNs), std::memory_order_relaxed);
  return follower_tid_.load(std::memory_order_relaxed);
}

void LoneCaller::put_back(bool ok) {
  if (ok) {
    // Release: the reader that sees the count sees its thread put back.
    stops_.fetch_add(1, std::memory_order_release);
  } else {
    set_may_follow(false);
  }
}

}  // namespace peregrine::fs
