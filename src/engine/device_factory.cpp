#include "peregrine/engine/device_factory.h"

namespace peregrine {

Expected<std::unique_ptr<UringDevice>> UringDeviceFactory::open_ring(const DriveSpec& spec) {
  auto ring = UringDevice::create(spec.fd, spec.queue_depth, spec.ring, spec.page_cache_fd);
  if (!ring) return ring.status();
  return std::unique_ptr<UringDevice>(*ring);
}

Expected<std::unique_ptr<DeviceQueue>> UringDeviceFactory::open(uint32_t, const DriveSpec& spec) {
  auto ring = open_ring(spec);
  if (!ring) return ring.status();
  return std::unique_ptr<DeviceQueue>(std::move(*ring));
}

}  // namespace peregrine
