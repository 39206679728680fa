// EngineConfig: the engine's tunables, fixed when the engine is created.
// Units: sub-IOs (one per member per stripe unit touched) unless named.
// The config file layer maps peregrine.conf onto this struct.
// Thread rules: plain values, fixed when the engine is created; the
// callbacks run on the threads their comments name.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "peregrine/backend/device_queue.h"  // IoOp

namespace peregrine {

// One failed IO on a member, as the engine reports it (after a failed
// merged IO was retried piece by piece: each report is one request's
// own bytes).
struct IoErrorReport {
  uint32_t drive = 0;
  IoOp op = IoOp::read;
  uint64_t member_offset = 0;
  uint64_t length = 0;
  int error = 0;          // -errno
  bool past_end = false;  // the member returned 0 bytes: it is shorter than the volume says
};

enum class Scheduler {
  per_drive,   // Falcon: submitters batch, pinned drive threads serve
  per_volume,  // baseline: the submitting thread does it all, like md/LVM
};

// The most member drives an engine serves, counting those an online
// restripe adds (the volume format allows kMaxMembers, no more).
inline constexpr uint32_t kEngineMaxDrives = 64;

struct EngineConfig {
  Scheduler scheduler = Scheduler::per_drive;

  // Batching watermarks, volume-wide (sub-IOs in one submitter's batch).
  // A batch whose drive share, plus everything the volume has outstanding,
  // does not cross `low_watermark` (is at most it: Falcon's "would not
  // cross", so a 1-drive volume serves a lone IO inline) is dispatched
  // inline by the submitting thread;
  // a batch that has reached `high_watermark` at the end of a request is
  // handed off (unplugged) at once.
  // 0 = default: 1 per drive (low) and 16 per drive (high). An online
  // restripe sets them for the new drive count (Engine::set_watermarks).
  uint32_t low_watermark = 0;
  uint32_t high_watermark = 0;
  bool inline_dispatch = true;
  // Shares larger than this: at most one a batch is served inline, and
  // none while another request waits for the submitting thread
  // (Submitter::set_poll_stop). Serving a large share inline means copying
  // it (a memory-backed member) or polling for it, one drive after the
  // other, while the drive threads could move every large share at once
  // and this thread could go on to the next request. The shares a batch
  // serves inline are dispatched after the others have been handed on.
  uint32_t inline_max_bytes = 64 * 1024;
  // A submitter that dispatched inline and asked to complete here
  // (Submitter::Completions::here, with a PollStop set) reaps the drive's
  // completions itself for up to this long, instead of leaving them to the
  // drive thread: a lone IO on a member with latency then costs no
  // hand-off to the drive thread and back. 0 = never poll.
  uint32_t inline_poll_ns = 0;

  // Pressure points, per drive (sub-IOs queued and not yet dispatched).
  // A submitter that would add to a drive above `pressure_high` blocks
  // until the drive has fallen below `pressure_low`.
  uint32_t pressure_low = 768;
  uint32_t pressure_high = 1024;

  // How long a drive holds writes nobody waits for (Request::may_hold:
  // writes the daemon answered before their IO), so that the next ones
  // join them in one merged IO: unpacking a tree answers one small
  // write per file, and each alone cost its drive thread an IO's
  // submission. The drive sends them at once when they reach max_io_bytes,
  // when any other IO or a flush is queued on the drive, when a thread is
  // about to wait for them (Engine::dispatch_held: the engine calls it at
  // a pressure point and when a submitter runs out of sub-IOs) or at a
  // stop. 0 = never hold.
  uint64_t hold_writes_ns = 0;

  // Neighbour merging limits for one dispatched IO.
  uint32_t max_io_bytes = 1 << 20;
  uint32_t max_iovecs = 64;

  // Submitting threads that may hold a Submitter at once.
  uint32_t max_submitters = 64;
  // Sub-IO slots per submitter; 0 = default (max(4096, 4 * high_watermark)).
  uint32_t subios_per_submitter = 0;

  // CPU for each drive; empty = spread over the allowed CPUs, preferring
  // the member's NUMA node when sysfs names one. Drives placed on the same
  // CPU share a thread unless `drive_threads` says otherwise.
  std::vector<int> drive_cpus;
  bool pin_drive_threads = true;
  // Drive threads; drive i is served by thread i % drive_threads. 0 = auto:
  // one thread per CPU the drives are placed on (unpinned: per allowed CPU),
  // never more than the drives.
  uint32_t drive_threads = 0;

  // Called on the drive thread, with its dispatch lock held, for every IO
  // that fails for good: must be short and must not block on the engine.
  std::function<void(const IoErrorReport&)> on_io_error;

  // Called on a submitting thread just before it blocks until drives finish
  // IO (a pressure point, its SubIo pool, a tag on the per-volume path), so
  // the layer above can hand on work the thread would hold up meanwhile (the
  // FUSE read turn). Must not block or call into the engine.
  std::function<void()> before_submitter_blocks;
};

}  // namespace peregrine
