// Discarder: tells the members which data-area space holds nothing (TRIM),
// so SSDs can erase ahead and member files give their blocks back to the
// filesystem under them. Two ways:
//   online (-o discard): a worker thread discards space as the allocator
//     releases it, i.e. once the journal record that freed it is durable;
//     each range goes back to the free map when its discard is done. The
//     worker takes whatever has queued up since its last round, sorted and
//     merged, so deleting a large tree costs its deleter nothing and the
//     members see few large discards.
//   trim() (FITRIM, `fstrim`): takes the free map's extents out, a slice at
//     a time, discards them and gives them back.
// Safety is the allocator's (allocator.h, "Discard"): only space no durable
// record refers to is ever discarded, and none is allocated while its
// discard is in flight. Discard errors never fail a free: the space goes
// back to the free map undiscarded and the error is counted.
//
// Thread rules: start_online() and stop() from the owner (Metadata, on its
// mount/unmount thread); trim() and stats() from any thread, at once. The
// worker thread touches only the Allocator (its mutex) and the VolumeIo.
// No lock of the caller may be held across trim(): it waits for member IO.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "peregrine/meta/allocator.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::meta {

struct DiscardStats {
  bool online = false;         // -o discard is on
  uint64_t online_bytes = 0;   // discarded by the worker since mount
  uint64_t fstrim_runs = 0;    // trim() calls that discarded or found nothing
  uint64_t fstrim_bytes = 0;   // discarded by trim() since mount
  uint64_t errors = 0;         // discards that failed (the space went back anyway)
  uint64_t pending_bytes = 0;  // now queued for discard or in flight
};

class Discarder {
 public:
  Discarder(Allocator& alloc, VolumeIo& io) : alloc_(alloc), io_(io) {}
  ~Discarder() { stop(); }
  Discarder(const Discarder&) = delete;
  Discarder& operator=(const Discarder&) = delete;

  // Online discard: durable frees are queued and discarded by a worker.
  void start_online();
  // Ends online discard. drain: first waits until everything queued has
  // been discarded (unmount: whatever was freed is discarded); otherwise
  // what is queued goes back undiscarded. The worker finishes its discard
  // in flight and exits. Idempotent.
  void stop(bool drain = false);

  // FITRIM: discards the free extents of at least `minlen` bytes within
  // the volume range [start, end) (inside the data area). *trimmed: bytes
  // discarded. 0, or -errno of the first discard that failed (what was
  // discarded before it is still counted in *trimmed).
  int trim(uint64_t start, uint64_t end, uint64_t minlen, uint64_t* trimmed);

  DiscardStats stats() const;

 private:
  void run();

  Allocator& alloc_;
  VolumeIo& io_;
  std::thread worker_;
  std::atomic<bool> online_{false};
  std::atomic<uint64_t> online_bytes_{0}, fstrim_runs_{0}, fstrim_bytes_{0}, errors_{0};
};

}  // namespace peregrine::meta
