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
// Depth is the exception: a caller with several requests outstanding
// does not wait for each reply, and beside it the two only take turns on
// one CPU. The caller's wake-ups stay there too (a ring thread that
// answers its own requests sends its replies from that CPU), so it never
// moves to a free one, and the other CPU idles: on 2 vCPUs, tmpfs
// members, one fio job at QD 32, the two alternated on one CPU, 42% of the
// machine idle, 206-234K reads/s; with the thread free, 322-359K
// (docs/transport.md). So rounds of several requests with direct reads or
// writes among them let go of the CPU while no other ring has run a round
// lately (`alone`: no other caller keeps another CPU busy with requests
// of its own). With callers on several CPUs each ring stays beside its
// own: two fio jobs at QD 16 measured 378-429K so, 227-413K with both
// rings free. Rounds of page-cache writebacks do not count: they come in
// batches between the requests an unpacking `tar` waits for one at a time
// (freed by them too, the unpack took 3% longer, in 4 of 4 rounds).
//
// So: pinned to its queue's CPU after a run of rounds (from one sleep to
// the next) in which it answered at least half of what it ran, a lone
// caller's direct IO at depth aside; free again after consecutive rounds
// of several requests that mostly other threads answered, or that were a
// lone caller's direct IO.
// The counts keep it from flapping on the odd round; a change costs one
// sched_setaffinity.
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

  // After a round: `requests` the thread ran between two sleeps, how many
  // replies it made itself meanwhile, and whether it was a lone caller's
  // direct IO at depth (no other ring ran a round lately; asked for only
  // when requests >= kHeavyRound and some were direct data). Whether to
  // move the thread.
  Change after_round(uint32_t requests, uint32_t answered_here, bool alone = false) {
    if (requests == 0) return Change::none;  // a wake-up with nothing to run
    const bool at_depth_alone = requests >= kHeavyRound && alone;
    if (uint64_t{answered_here} * 2 >= requests && !at_depth_alone) {
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
