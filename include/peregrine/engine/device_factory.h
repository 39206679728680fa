// DeviceFactory: the one seam between the engine and the devices under it
// (LevelDB's Env plays this part). The engine asks the factory for each
// member drive's DeviceQueue; the layer that builds a volume (the fs volume
// runtime, a test, a benchmark) chooses the factory, and with it whether a
// member is plain io_uring or wears test and benchmark layers (a shaped SSD
// model, injected faults: see layered_device_factory.h). The engine itself
// knows only DeviceQueue.
//
// Thread rules: Engine::create calls open() once per drive, in drive
// order, on the creating thread, and keeps no reference to the factory
// afterwards. The device it returns then follows DeviceQueue's rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "peregrine/backend/device_queue.h"
#include "peregrine/backend/uring_device.h"
#include "peregrine/util/result.h"

namespace peregrine {

// One member drive as the engine needs it. The fds stay owned by the caller
// (a MemberFile) and must outlive the Engine.
struct DriveSpec {
  std::string name;           // for messages, e.g. the member's path
  int fd = -1;                // opened with O_DIRECT
  // The same member opened without O_DIRECT (MemberFile::page_cache_fd),
  // for the reads marked via_page_cache; -1: every read direct.
  int page_cache_fd = -1;
  uint32_t queue_depth = 32;  // tags: IOs the engine keeps on the device
  int numa_node = -1;
  RingOptions ring;  // io_uring setup; copy_inline for memory-backed members (see UringDevice)
};

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // The device for drive `drive` (0-based, the member's index in the
  // stripe map) as `spec` describes it. The engine names the member in
  // the message of a failure.
  virtual Expected<std::unique_ptr<DeviceQueue>> open(uint32_t drive, const DriveSpec& spec) = 0;
};

// Production: an io_uring ring on the member's fd, nothing over it.
class UringDeviceFactory : public DeviceFactory {
 public:
  Expected<std::unique_ptr<DeviceQueue>> open(uint32_t drive, const DriveSpec& spec) override;
  // The ring itself, for factories that put layers over it.
  static Expected<std::unique_ptr<UringDevice>> open_ring(const DriveSpec& spec);
};

}  // namespace peregrine
