// RingPlacement: where a FUSE ring thread should run, from who answers its
// requests (fuse.pin_rings = false, the default).
//
// The kernel queues a request on the ring of the CPU its caller runs on.
// A ring thread that answers its requests itself (metadata, memory members
// copied inline, a lone IO it polled for) does the request's whole work:
// on its queue's CPU it saves the cross-CPU wake-ups of a request and its
// reply (10 us or more each on a virtual machine that halts idle vCPUs,
// docs/transport.md, "Light load"), and at depth it shares that CPU with
// the application, which the scheduler then moves to a free CPU, whose
// queue and ring take the next requests: the work spreads over the rings.
// Unpinned, it runs on the CPU the application leaves free, the
// application stays where it is, and one ring thread does all the work
// (measured on 2 CPUs, tmpfs members, 4 KiB random read at QD 32: one
// ring served 94% of the requests, 85% busy; docs/performance-history.md).
// A ring whose requests drive threads answer (members with latency) does
// little per request and gains nothing beside the application: its
// replies' wake-ups come from the drive threads' CPUs whatever it does,
// and pinning measured fewer IOPS on disk members at QD 1.
//
// So: pinned to its queue's CPU after a run of rounds (from one sleep to
// the next) in which it answered at least half of what it ran; free again
// after consecutive rounds of several requests that mostly other threads
// answered. The counts keep it from flapping on the odd round; a change
// costs one sched_setaffinity.
//
// Thread rules: one per ring, used by its ring thread only.
#pragma once

#include <cstdint>

namespace peregrine::fs {

class RingPlacement {
 public:
  // Self-served rounds in a row before pinning; rounds answered elsewhere
  // in a row before letting go.
  static constexpr uint32_t kSelfServedRoundsToPin = 16;
  static constexpr uint32_t kElsewhereRoundsToFree = 2;
  // A round answered elsewhere counts towards letting go from this many
  // requests: one to three are still one caller at a time (a close() sends
  // FLUSH and then RELEASE without waiting for it, so the next open's
  // LOOKUP often shares a round with that RELEASE).
  static constexpr uint32_t kHeavyRound = 4;

  enum class Change { none, pin, free };

  // After a round: `requests` the thread ran between two sleeps, and how
  // many replies it made itself meanwhile. Whether to move the thread.
  Change after_round(uint32_t requests, uint32_t answered_here) {
    if (requests == 0) return Change::none;  // a wake-up with nothing to run
    if (uint64_t{answered_here} * 2 >= requests) {
      elsewhere_ = 0;
      if (!pinned_ && ++self_served_ >= kSelfServedRoundsToPin) {
        pinned_ = true;
        self_served_ = 0;
        return Change::pin;
      }
    } else if (requests >= kHeavyRound) {
      self_served_ = 0;
      if (pinned_ && ++elsewhere_ >= kElsewhereRoundsToFree) {
        pinned_ = false;
        elsewhere_ = 0;
        return Change::free;
      }
    }
    // One to three requests that other threads answer say nothing either
    // way.
    return Change::none;
  }

  bool pinned() const { return pinned_; }

 private:
  bool pinned_ = false;
  uint32_t self_served_ = 0;
  uint32_t elsewhere_ = 0;
};

}  // namespace peregrine::fs
