// Little-endian integers in byte buffers: the one encoding of every integer
// peregrine writes to its members (superblock, mount record, journal
// batches and records, checkpoints; docs/format.md and
// docs/metadata-format.md). Independent of the host's byte order.
//
// REQUIRES: `bytes` is 1 to 8, and the buffer holds `bytes` bytes at `off`
// (unchecked: callers check their bounds first, as the decoders do).
// Thread rules: none (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace peregrine {

// The low `bytes` bytes of v, least significant first, at b[off].
inline void put_le(std::span<std::byte> b, size_t off, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[off + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
// The `bytes`-byte little-endian integer at b[off].
inline uint64_t get_le(std::span<const std::byte> b, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(b[off + i]) << (8 * i);
  return v;
}

inline void put_le16(std::span<std::byte> b, size_t off, uint16_t v) { put_le(b, off, v, 2); }
inline void put_le32(std::span<std::byte> b, size_t off, uint32_t v) { put_le(b, off, v, 4); }
inline void put_le64(std::span<std::byte> b, size_t off, uint64_t v) { put_le(b, off, v, 8); }
inline uint16_t get_le16(std::span<const std::byte> b, size_t off) { return static_cast<uint16_t>(get_le(b, off, 2)); }
inline uint32_t get_le32(std::span<const std::byte> b, size_t off) { return static_cast<uint32_t>(get_le(b, off, 4)); }
inline uint64_t get_le64(std::span<const std::byte> b, size_t off) { return get_le(b, off, 8); }

}  // namespace peregrine
