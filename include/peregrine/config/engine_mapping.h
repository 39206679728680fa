// Settings -> EngineConfig: how the config file's [engine] and [drive]
// tables become the engine's tunables for a volume of `members` drives.
//
// Header-only on purpose: peregrine_config stays below the engine in the
// layer order (it links no engine code); the daemon, which links both,
// calls this once on the main thread before creating the engine.
//
// Thread rules: called once, on the daemon's main thread, before the engine
// is created.
#pragma once

#include <cstdint>

#include "peregrine/config/settings.h"
#include "peregrine/engine/engine_config.h"

namespace peregrine::config {

inline EngineConfig engine_config(const Settings& s, uint32_t members) {
  EngineConfig e;
  e.scheduler =
      s.engine.scheduler == Scheduler::kPerVolume ? peregrine::Scheduler::per_volume : peregrine::Scheduler::per_drive;
  // The config gives watermarks per drive (Falcon's definition); the engine
  // takes volume-wide values, where 0 means "engine default".
  e.high_watermark = static_cast<uint32_t>(s.engine.high_watermark(members));
  e.low_watermark = static_cast<uint32_t>(s.engine.low_watermark(members));
  e.inline_dispatch = s.engine.inline_dispatch;
  e.inline_poll_ns = s.engine.inline_poll_us * 1000u;
  if (e.low_watermark == 0) {
    // low_watermark_per_drive = 0 means "never inline"; 0 would mean
    // "default" to the engine, so say it with the flag instead.
    e.inline_dispatch = false;
    e.low_watermark = 1;
  }
  e.pressure_low = s.engine.low_pressure_per_drive;
  e.pressure_high = s.engine.high_pressure_per_drive;
  e.max_io_bytes = s.drive.max_merge_bytes;
  e.max_iovecs = s.drive.max_merge_iovecs;
  e.hold_writes_ns = uint64_t{s.drive.hold_answered_us} * 1000;
  // "auto" and "none" leave the list empty (= spread, NUMA-aware); "none"
  // then leaves the threads unpinned. A CPU list is used round-robin.
  e.drive_cpus.clear();
  e.pin_drive_threads = s.drive.cpus.mode != CpuAffinity::Mode::kNone;
  e.drive_threads = s.drive.threads.value_or(0);
  if (s.drive.cpus.mode == CpuAffinity::Mode::kList) {
    for (uint32_t d = 0; d < members; ++d)
      e.drive_cpus.push_back(static_cast<int>(s.drive.cpus.cpus[d % s.drive.cpus.cpus.size()]));
  }
  return e;
}

}  // namespace peregrine::config
