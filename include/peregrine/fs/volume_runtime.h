// VolumeRuntime: an assembled volume with its engine running — what the
// mount daemon and fsck both start from. Opening assembles the members
// (locked; nothing written), starts one drive thread per member and gives
// a blocking VolumeIo over the engine plus the metadata layer's geometry.
//
// Thread rules: open and destroy on one thread. `io` and `pool` are
// thread-safe. Destruction stops the engine after completing all IO.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "peregrine/config/settings.h"
#include "peregrine/engine/engine.h"
#include "peregrine/fs/engine_volume_io.h"
#include "peregrine/fs/submitter_pool.h"
#include "peregrine/meta/types.h"
#include "peregrine/util/result.h"
#include "peregrine/volume/assembly.h"

namespace peregrine::fs {

struct VolumeRuntime {
  AssembledVolume volume;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<SubmitterPool> pool;
  std::unique_ptr<EngineVolumeIo> io;
  meta::Geometry meta_geometry;
  std::vector<std::string> member_names;  // in member index order
  // Tests only (PEREGRINE_TEST_POWER_CUT): member i's power-cut layer (the
  // one its drive wears), for the daemon's own writes to it once mounted
  // (MemberFile::route_writes_through: the unmount's mount record, online
  // grow and replace superblocks), so that a cut loses or tears them as a
  // drive would. Null where the member wears none.
  std::vector<std::shared_ptr<DeviceQueue>> member_layers;
  // Tests only (PEREGRINE_TEST_POWER_CUT): puts the power-cut layer over a
  // member that joins the mounted volume (online replace) as over the
  // others: over its ring, and over its MemberFile's own writes, with
  // `index` naming its undo log. Empty when the members wear no layer.
  std::function<Expected<std::unique_ptr<DeviceQueue>>(MemberFile& member, uint32_t index,
                                                       std::unique_ptr<DeviceQueue> ring)>
      join_layers;

  ~VolumeRuntime();
};

// How the engine drives member `m` under `settings` (its ring, queue
// depth): for every member at open_volume(), and for a member that joins
// a mounted volume (online replace). Any thread.
DriveSpec drive_spec_for(const config::Settings& settings, const MemberFile& m);

// The largest file whose reads for the kernel's page cache go through the
// members' own (drive.small_reads_via_page_cache): one the allocator packs
// among the small files (meta::Allocator), when the option is on and a
// member has a page-cache descriptor (MemberFile::page_cache_fd); else 0.
uint64_t member_cache_file_bytes(const config::Settings& settings, const VolumeRuntime& vr);

// `mode`: read_only for checks that must not write (fsck -n).
// PEREGRINE_BENCH_SHAPE in the environment shapes every member (benchmarks);
// PEREGRINE_TEST_FAULTS makes chosen members fail or stall (tests only,
// src/fs/test_faults.h). `on_io_error`: see EngineConfig::on_io_error.
// allow_short_members: see assemble() (read_only only; fsck -n).
Expected<std::unique_ptr<VolumeRuntime>> open_volume(const std::vector<std::string>& members, MemberFile::Mode mode,
                                                     const config::Settings& settings,
                                                     std::function<void(const IoErrorReport&)> on_io_error = {},
                                                     bool allow_short_members = false);

}  // namespace peregrine::fs
