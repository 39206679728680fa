#include "peregrine/fs/power_cut_members.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "peregrine/backend/volatile_cache_device.h"
#include "peregrine/engine/device_factory.h"
#include "peregrine/util/test_hooks.h"
#include "test_faults.h"

namespace peregrine::fs {

Expected<MemberHook> power_cut_hook_from_env(const std::function<void(const std::string&)>& note) {
  const char* spec = test_hook(kTestPowerCutEnv);
  if (spec == nullptr) return MemberHook{};
  auto plan = parse_test_power_cut(spec);
  if (!plan) return plan.status();
  if (note)
    note(std::string("TEST ONLY: members keep undo logs for power cuts (") + kTestPowerCutEnv + "=" + spec + ")");
  auto ios = std::make_shared<std::atomic<uint64_t>>(0);
  return MemberHook([dir = plan->dir, kill_at = plan->kill_at_io, ios](MemberFile& m, uint32_t index) -> Status {
    // The layer's blocking calls are the ring device's pread/pwrite and
    // fdatasync on the member's own descriptor; the ring itself idles.
    DriveSpec spec;
    spec.name = m.info().path;
    spec.fd = m.fd();
    spec.queue_depth = 1;
    auto ring = UringDeviceFactory::open_ring(spec);
    if (!ring) return ring.status();
    auto layer = VolatileCacheDevice::create(std::move(*ring), m.fd(), PowerCutPlan{power_cut_log(dir, index), kill_at, ios});
    if (!layer) return layer.status();
    m.route_writes_through(std::shared_ptr<DeviceQueue>(std::move(*layer)));
    return Status::ok();
  });
}

}  // namespace peregrine::fs
