// CRC32C (Castagnoli), the checksum of every on-disk structure: superblocks,
// checkpoints, journal records. Backed by Intel ISA-L's crc32_iscsi, which
// uses the SSE4.2 crc32 instruction where the CPU has it.
// Thread rules: pure function, callable from any thread.
#pragma once

#include <isa-l/crc.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace peregrine {

// Standard CRC32C: initial value and final xor 0xFFFFFFFF, so that
// crc32c("123456789") == 0xE3069283. `seed` continues an earlier result.
inline uint32_t crc32c(const void* data, size_t len, uint32_t seed = 0) {
  // crc32_iscsi neither inverts its input nor its output; do both here.
  return ~crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)), static_cast<int>(len), ~seed);
}

inline uint32_t crc32c(std::span<const std::byte> bytes, uint32_t seed = 0) {
  return crc32c(bytes.data(), bytes.size(), seed);
}

}  // namespace peregrine
