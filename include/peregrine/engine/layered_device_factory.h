// LayeredDeviceFactory: members that wear test and benchmark layers over
// their io_uring ring, each drive its own: a ShapedDevice (an SSD with a
// given latency, queue depth, IOPS and bandwidth), then a
// FaultInjectingDevice (IOs that fail, come back short or stall), then a
// VolatileCacheDevice (a drive's volatile write cache, for power cuts),
// then a test's own wrapper (e.g. one that holds completions). Chosen by whoever
// builds the engine (the fs volume runtime from its bench and test
// environment variables, tests, benchmarks) and handed to Engine::create
// through the DeviceFactory seam; the engine includes none of this.
//
// Thread rules: as DeviceFactory; the layers are fixed before
// Engine::create and read only by it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "peregrine/backend/faulty_device.h"
#include "peregrine/backend/shaped_device.h"
#include "peregrine/backend/volatile_cache_device.h"
#include "peregrine/engine/device_factory.h"

namespace peregrine {

// What one drive wears, innermost first. Empty: a plain ring.
struct DeviceLayers {
  std::optional<ShapeParams> shape;  // tests and benchmarks
  std::optional<FaultPlan> faults;   // tests
  std::optional<PowerCutPlan> power_cut;  // tests
  // Tests: wraps the finished stack (e.g. to hold completions).
  std::function<std::unique_ptr<DeviceQueue>(std::unique_ptr<DeviceQueue>)> wrap;
};

class LayeredDeviceFactory final : public DeviceFactory {
 public:
  // layers[i] for drive i; drives past the end wear nothing.
  explicit LayeredDeviceFactory(std::vector<DeviceLayers> layers) : layers_(std::move(layers)) {}

  Expected<std::unique_ptr<DeviceQueue>> open(uint32_t drive, const DriveSpec& spec) override {
    auto ring = UringDeviceFactory::open_ring(spec);
    if (!ring) return ring.status();
    if (drive >= layers_.size()) return std::unique_ptr<DeviceQueue>(std::move(*ring));
    const DeviceLayers& l = layers_[drive];
    std::unique_ptr<DeviceQueue> device;
    if (l.shape) {
      device = std::make_unique<ShapedDevice>(std::move(*ring), *l.shape, spec.queue_depth);
    } else {
      device = std::move(*ring);
    }
    if (l.faults) device = std::make_unique<FaultInjectingDevice>(std::move(device), *l.faults);
    if (l.power_cut) {
      auto cached = VolatileCacheDevice::create(std::move(device), spec.fd, *l.power_cut);
      if (!cached) return cached.status();
      device = std::move(*cached);
    }
    if (l.wrap) device = l.wrap(std::move(device));
    return device;
  }

 private:
  std::vector<DeviceLayers> layers_;
};

}  // namespace peregrine
