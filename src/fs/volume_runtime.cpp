#include "peregrine/fs/volume_runtime.h"

#include <sys/file.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "peregrine/config/engine_mapping.h"
#include "peregrine/backend/shared_device.h"
#include "peregrine/engine/layered_device_factory.h"
#include "peregrine/fs/read_turn.h"
#include "peregrine/meta/allocator.h"
#include "peregrine/util/test_hooks.h"
#include "test_faults.h"

namespace peregrine::fs {
namespace {

uint32_t queue_depth_for(const config::Settings& s, const MemberFile& m) {
  if (s.drive.queue_depth) return *s.drive.queue_depth;
  uint32_t qd = m.info().queue_depth;  // sysfs nr_requests of a block device
  if (qd == 0) return 32;
  return std::min<uint32_t>(qd, 1024);
}

}  // namespace

VolumeRuntime::~VolumeRuntime() {
  // Users of the pool and io are gone; stop in dependency order.
  io.reset();
  pool.reset();
  engine.reset();
  // The kernel tears io_uring rings down asynchronously, and a ring holds
  // its registered member files for a while after it is closed; the member
  // locks would outlive this process by milliseconds. Unlock explicitly, so
  // the volume can be mounted again the moment we are gone.
  for (const MemberFile& m : volume.members) ::flock(m.fd(), LOCK_UN);
}

DriveSpec drive_spec_for(const config::Settings& settings, const MemberFile& m) {
  DriveSpec d;
  d.name = m.info().path;
  d.fd = m.fd();
  if (settings.drive.small_reads_via_page_cache) d.page_cache_fd = m.page_cache_fd();
  d.queue_depth = queue_depth_for(settings, m);
  d.numa_node = m.info().numa_node;
  d.ring.copy_inline = m.info().memory_backed && settings.io_uring.copy_inline_on_tmpfs;
  d.ring.sq_entries = settings.io_uring.sq_entries.value_or(0);
  d.ring.sqpoll = settings.io_uring.sqpoll;
  d.ring.sqpoll_idle_ms = settings.io_uring.sqpoll_idle_ms;
  return d;
}

uint64_t member_cache_file_bytes(const config::Settings& settings, const VolumeRuntime& vr) {
  if (!settings.drive.small_reads_via_page_cache) return 0;
  for (const MemberFile& m : vr.volume.members) {
    // Packed: at most kSmallFileBytes and a stripe unit (Allocator).
    if (m.page_cache_fd() >= 0)
      return std::min<uint64_t>(meta::Allocator::kSmallFileBytes, vr.engine->map().stripe_unit());
  }
  return 0;
}

Expected<std::unique_ptr<VolumeRuntime>> open_volume(const std::vector<std::string>& members, MemberFile::Mode mode,
                                                     const config::Settings& settings,
                                                     std::function<void(const IoErrorReport&)> on_io_error,
                                                     bool allow_short_members) {
  auto vol = assemble(members, mode, allow_short_members);
  if (!vol) return vol.status();
  auto rt = std::make_unique<VolumeRuntime>();
  rt->volume = std::move(*vol);
  const Superblock& sb = rt->volume.superblock;
  const VolumeGeometry& geo = rt->volume.geometry;
  uint32_t n = geo.member_count;

  std::vector<DriveSpec> specs;
  std::vector<DeviceLayers> layers(n);  // what the environment asks members to wear
  for (const MemberFile& m : rt->volume.members) {
    specs.push_back(drive_spec_for(settings, m));
    rt->member_names.push_back(m.info().path);
  }
  // Benchmarks only: make every member behave like a given SSD (see
  // tools/bench/fuse). "LATENCY_US:QUEUE_DEPTH:IOPS:MB_PER_S".
  if (const char* shape = test_hook("PEREGRINE_BENCH_SHAPE")) {
    unsigned long lat_us = 0, iops = 0, mbps = 0;
    unsigned qd = 0;
    if (std::sscanf(shape, "%lu:%u:%lu:%lu", &lat_us, &qd, &iops, &mbps) != 4 || qd == 0)
      return Status::error(EINVAL, "PEREGRINE_BENCH_SHAPE must be LATENCY_US:QUEUE_DEPTH:IOPS:MB_PER_S");
    for (uint32_t i = 0; i < n; ++i) {
      layers[i].shape = ShapeParams{lat_us * 1000, qd, iops, mbps * 1000000};
      specs[i].queue_depth = qd;
    }
  }
  // Tests only: members that fail or stall on command (test_faults.h).
  if (const char* faults = test_hook(kTestFaultsEnv)) {
    MemberAreas areas{n, geo.data_start, geo.data_start + sb.meta_size / n, geo.data_start + geo.member_data_size};
    auto rules = parse_test_faults(faults, areas);
    if (!rules) return rules.status();
    for (auto& [member, rule] : *rules) {
      if (!layers[member].faults) layers[member].faults = FaultPlan{};
      layers[member].faults->rules.push_back(std::move(rule));
    }
  }
  // Tests only: members with a volatile write cache, for power cuts.
  std::vector<std::shared_ptr<DeviceQueue>> cut_layers(n);
  if (const char* cut = test_hook(kTestPowerCutEnv)) {
    auto plan = parse_test_power_cut(cut);
    if (!plan) return plan.status();
    auto ios = std::make_shared<std::atomic<uint64_t>>(0);
    for (uint32_t i = 0; i < n; ++i) {
      layers[i].power_cut = PowerCutPlan{power_cut_log(plan->dir, i), plan->kill_at_io, ios};
      layers[i].wrap = [&cut_layers, i](std::unique_ptr<DeviceQueue> stack) -> std::unique_ptr<DeviceQueue> {
        cut_layers[i] = std::shared_ptr<DeviceQueue>(std::move(stack));
        return std::make_unique<SharedDevice>(cut_layers[i]);
      };
    }
    rt->join_layers = [dir = plan->dir, kill_at = plan->kill_at_io, ios](
                          MemberFile& member, uint32_t index,
                          std::unique_ptr<DeviceQueue> ring) -> Expected<std::unique_ptr<DeviceQueue>> {
      auto layer = VolatileCacheDevice::create(std::move(ring), member.fd(),
                                               PowerCutPlan{power_cut_log(dir, index), kill_at, ios});
      if (!layer) return layer.status();
      std::shared_ptr<DeviceQueue> shared(std::move(*layer));
      member.route_writes_through(shared);
      return std::unique_ptr<DeviceQueue>(std::make_unique<SharedDevice>(shared));
    };
  }
  if (const std::string plant = planted_bug();
      !plant.empty() && plant != kPlantJournalWithoutDataFlush && plant != kPlantDiscardBeforeFreeDurable)
    return Status::error(EINVAL, std::string(kTestPlantEnv) + "=" + plant + ": no such planted bug (known: " +
                                     kPlantJournalWithoutDataFlush + ", " + kPlantDiscardBeforeFreeDurable + ")");
  StripeMap map(n, geo.stripe_unit, geo.data_start, geo.member_data_size);
  EngineConfig ec = config::engine_config(settings, n);
  // Threads that keep a submitter may borrow a second one for blocking IO
  // (EngineVolumeIo): each ring thread (one per possible CPU) for a
  // partial write, each FUSE worker or blocking-op thread for its own;
  // the journal committer and the main thread borrow one. A thread that
  // finds every slot taken fails its IO with EAGAIN.
  const uint32_t possible_cpus = static_cast<uint32_t>(std::max(1, get_nprocs_conf()));
  ec.max_submitters = std::max(ec.max_submitters, 2 * possible_cpus + 4 * settings.fuse.workers + 8);
  ec.on_io_error = std::move(on_io_error);
  // A FUSE worker blocked on the drives must not keep others from reading
  // requests meanwhile (a stat need not wait for a write flood to drain).
  ec.before_submitter_blocks = [] { ReadTurn::leave_held_turn(); };
  LayeredDeviceFactory devices(std::move(layers));
  auto engine = Engine::create(ec, map, std::move(specs), devices);
  if (!engine) return engine.status();
  rt->engine = std::move(*engine);
  rt->member_layers = std::move(cut_layers);
  rt->pool = std::make_unique<SubmitterPool>(*rt->engine);
  rt->io = std::make_unique<EngineVolumeIo>(*rt->pool, &rt->volume.members);

  meta::Geometry& mg = rt->meta_geometry;
  mg.meta_offset = sb.meta_offset;
  mg.meta_size = sb.meta_size;
  mg.data_offset = sb.meta_offset + sb.meta_size;
  mg.data_size = geo.volume_size() - mg.data_offset;
  mg.stripe_unit = geo.stripe_unit;
  mg.member_count = n;
  return rt;
}

}  // namespace peregrine::fs
