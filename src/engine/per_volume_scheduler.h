// PerVolumeScheduler: the per-volume baseline (Scheduler::per_volume), the
// way the kernel's block layer serves a striped volume, kept so that the
// per-drive scheduler can be measured against it (docs/design.md). A
// submitter takes a drive's tag as it stages each piece, blocking the whole
// thread while that drive has none (after dispatching what it holds, as
// the kernel flushes its plug before sleeping); it merges a piece only
// into the IO it staged last on the same drive; and at unplug it
// dispatches its batch itself, drive by drive, starting one drive further
// on each time. Drive threads only reap and complete.
//
// Thread rules: one per Submitter, used only by the thread that holds it.
// A tag is that thread's alone from Drive::try_acquire_tag until unplug()
// hands it to the drive (Drive::dispatch_tags, under the drive's dispatch
// lock); completions then run on the drive thread, as for the per-drive
// scheduler. Internal to the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "drive.h"
#include "peregrine/engine/engine_config.h"
#include "peregrine/engine/request.h"
#include "peregrine/engine/stripe_map.h"
#include "sub_io.h"

namespace peregrine {

class PerVolumeScheduler {
 public:
  // `map` is the engine's own: online grow raises its end in place.
  // `drives`: the engine's, all of them (an online restripe, which adds
  // drives, needs the per-drive scheduler).
  PerVolumeScheduler(const EngineConfig& config, const StripeMap& map,
                     std::span<const std::unique_ptr<Drive>> drives, SubmitterSlot& slot);
  PerVolumeScheduler(const PerVolumeScheduler&) = delete;
  PerVolumeScheduler& operator=(const PerVolumeScheduler&) = delete;

  // Stages a request that Submitter::add has checked and counted (a flush
  // goes to flush_targets only). May unplug, and may block for a tag or for
  // SubIos.
  void add(Request& r, const std::vector<uint32_t>& flush_targets);
  // Dispatches every tag staged, round-robin over the drives.
  void unplug();

 private:
  void stage(Request& r, uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len);

  const EngineConfig& config_;
  const StripeMap& map_;
  const std::span<const std::unique_ptr<Drive>> drives_;
  SubmitterSlot& slot_;                           // its SubIo pool, and `batch`, which has_staged() reads
  std::vector<std::vector<uint32_t>> plug_tags_;  // per drive: tags taken at plug time
  uint32_t round_robin_ = 0;
};

}  // namespace peregrine
