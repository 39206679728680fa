// Discarder: online discard worker and FITRIM (discarder.h).
#include "peregrine/meta/discarder.h"

#include <cerrno>
#include <vector>

namespace peregrine::meta {

namespace {
// FITRIM takes the free map's space out in slices: at most this much per
// piece (one discard call, cut per member) and per round. Allocations meanwhile
// get other free space; one that finds none waits for the round. Measured on
// file members (ext4, 4 members): 64 MiB pieces trimmed 4 GiB of freed
// data in 1.6 s, 1 GiB pieces in 1.0 s, against 0.8 s for fallocate -p of
// the same bytes straight on the files.
constexpr uint64_t kTrimPiece = 1024ull << 20;
constexpr uint64_t kTrimRound = 1024ull << 20;
}  // namespace

void Discarder::start_online() {
  if (online_.exchange(true)) return;
  alloc_.set_discard_on_free(true);
  worker_ = std::thread([this] { run(); });
}

void Discarder::stop(bool drain) {
  if (!online_.load()) return;
  if (drain) alloc_.wait_discards_idle();
  online_.store(false);
  alloc_.set_discard_on_free(false);
  alloc_.stop_discards();
  worker_.join();
}

void Discarder::run() {
  std::vector<VolRange> batch;
  while (alloc_.wait_for_discards(&batch)) {
    for (const VolRange& r : batch) {
      // EOPNOTSUPP: not a failure (a member that cannot discard, or an
      // online restripe in progress: EngineVolumeIo::stop_discards).
      if (const int rc = io_.discard(r.off, r.len); rc == 0) {
        online_bytes_.fetch_add(r.len, std::memory_order_relaxed);
      } else if (rc != -EOPNOTSUPP) {
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
      alloc_.discard_done({r});  // back in the free map: allocations may use it again
    }
  }
}

int Discarder::trim(uint64_t start, uint64_t end, uint64_t minlen, uint64_t* trimmed) {
  *trimmed = 0;
  uint64_t cursor = start;
  std::vector<VolRange> round;
  int rc = 0;
  while (rc == 0 && cursor < end) {
    alloc_.take_free_for_trim(&cursor, end, minlen, kTrimPiece, kTrimRound, &round);
    if (round.empty()) break;
    for (const VolRange& r : round) {
      if (rc == 0) rc = io_.discard(r.off, r.len);
      if (rc == 0) {
        *trimmed += r.len;
      } else if (rc != -EOPNOTSUPP) {
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    alloc_.discard_done(round);
  }
  fstrim_runs_.fetch_add(1, std::memory_order_relaxed);
  fstrim_bytes_.fetch_add(*trimmed, std::memory_order_relaxed);
  return rc;
}

DiscardStats Discarder::stats() const {
  DiscardStats s;
  s.online = online_.load(std::memory_order_relaxed);
  s.online_bytes = online_bytes_.load(std::memory_order_relaxed);
  s.fstrim_runs = fstrim_runs_.load(std::memory_order_relaxed);
  s.fstrim_bytes = fstrim_bytes_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.pending_bytes = alloc_.discard_pending_bytes();
  return s;
}

}  // namespace peregrine::meta
