// RingPlacement: where a FUSE ring thread should run, from how its requests
// arrive (fuse.pin_rings = false, the default).
//
// The kernel queues a request on the ring of the CPU its caller runs on.
// Requests that come one at a time (an application waiting for each reply:
// stat, QD 1 reads) gain nothing from a second CPU: a ring thread running
// elsewhere costs a cross-CPU wake-up for the request and another for the
// reply, which on a virtual machine that halts idle vCPUs is 10 us or more
// each (docs/transport.md, "Light load"). Requests that come in bunches
// (an application with IO in flight) gain the second CPU: a ring thread
// pinned beside its application halves what they get at depth.
//
// So: pinned to its queue's CPU after a run of light rounds (each round,
// from one sleep to the next, ran one request and answered it itself),
// free again after consecutive rounds that ran several. A request whose
// reply a drive thread sends (IO on a member with latency) is not light:
// the reply's wake-up then comes from the drive thread's CPU whatever the
// ring thread does, and pinning measured 13% fewer QD 1 IOPS on disk
// members. The counts keep it from flapping on the odd round; a change
// costs one sched_setaffinity.
//
// Thread rules: one per ring, used by its ring thread only.
#pragma once

#include <cstdint>

namespace peregrine::fs {

class RingPlacement {
 public:
  // Light rounds in a row before pinning; heavy rounds in a row before
  // letting go.
  static constexpr uint32_t kLightRoundsToPin = 16;
  static constexpr uint32_t kHeavyRoundsToFree = 2;
  // A round this big is depth. Two or three is still one caller at a time:
  // a close() sends FLUSH and then RELEASE without waiting for it, so the
  // next open's LOOKUP often shares a round with that RELEASE.
  static constexpr uint32_t kHeavyRound = 4;

  enum class Change { none, pin, free };

  // After a round: `requests` the thread ran between two sleeps, and how
  // many replies it made itself meanwhile. Whether to move the thread.
  Change after_round(uint32_t requests, uint32_t answered_here) {
    if (requests == 1 && answered_here >= 1) {
      heavy_ = 0;
      if (!pinned_ && ++light_ >= kLightRoundsToPin) {
        pinned_ = true;
        light_ = 0;
        return Change::pin;
      }
    } else if (requests >= kHeavyRound) {
      light_ = 0;
      if (pinned_ && ++heavy_ >= kHeavyRoundsToFree) {
        pinned_ = false;
        heavy_ = 0;
        return Change::free;
      }
    }
    // 0 (a wake-up with nothing to run), 2-3, and a request left to a
    // drive thread say nothing either way.
    return Change::none;
  }

  bool pinned() const { return pinned_; }

 private:
  bool pinned_ = false;
  uint32_t light_ = 0;
  uint32_t heavy_ = 0;
};

}  // namespace peregrine::fs
