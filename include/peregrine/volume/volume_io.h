// Blocking IO on the volume's logical byte space, for the metadata layer.
//
// The journal, the checkpoints and the superblock-independent metadata are
// read and written through this interface. The production implementation
// (EngineVolumeIo) sends every call through the per-drive engine and waits
// for its completion; tests use an in-memory implementation that can inject
// a crash after the k-th member write.
//
// Alignment contract: offsets, lengths and buffer addresses are multiples
// of kVolumeIoAlign (4096). Calls return 0 or -errno.
//
// Thread rules: implementations are thread-safe: any number of threads may
// call them at once.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

namespace peregrine {

inline constexpr uint64_t kVolumeIoAlign = 4096;

class VolumeIo {
 public:
  virtual ~VolumeIo() = default;
  virtual uint64_t size() const = 0;  // bytes of logical volume space
  virtual int read(uint64_t offset, std::span<std::byte> out) = 0;
  virtual int write(uint64_t offset, std::span<const std::byte> data) = 0;
  // Makes every write that completed before the call durable on all members.
  virtual int flush() = 0;
  // Discards (TRIM) [offset, offset + length): the members may forget those
  // bytes, which then read as anything. Only for space nothing refers to,
  // not even after a crash (the allocator's discard rules), with no IO to
  // it in flight. -EOPNOTSUPP when no member can discard.
  virtual int discard(uint64_t /*offset*/, uint64_t /*length*/) { return -EOPNOTSUPP; }
};

}  // namespace peregrine
