// Creating a volume: checks every member, then writes superblocks and an
// all-zero metadata area (the state the metadata layer reads as "fresh").
//
// make_volume() writes nothing to any member until every member has passed
// every check; a refusal names the member and the problem. Writes happen in
// a crash-safe order: zeroing, sync, primary superblocks, sync, backups,
// sync, so an interrupted mkfs never leaves an assemblable half-volume.
// Called from one thread; it holds exclusive member locks while it runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "peregrine/util/result.h"
#include "peregrine/volume/superblock.h"

namespace peregrine {

inline constexpr uint32_t kDefaultStripeUnit = 128 * 1024;
// 1 MiB: room for both superblock copies, and aligned for every stripe unit.
inline constexpr uint64_t kDefaultDataStart = 1024 * 1024;
inline constexpr uint64_t kMinMetaSize = 16ull << 20;
inline constexpr uint64_t kMaxDefaultMetaSize = 2ull << 30;

struct MkfsOptions {
  std::vector<std::string> members;    // member index = position here
  uint32_t stripe_unit = kDefaultStripeUnit;
  std::string label;
  std::optional<uint64_t> size;        // create or extend regular-file members to this size
  std::optional<uint64_t> meta_size;   // rounded up to stripe_unit x member count
  bool force = false;                  // overwrite existing signatures and peregrine members
};

struct MkfsResult {
  Superblock superblock;               // member 0's copy; the shared fields hold for all
  std::vector<std::string> members;    // paths in index order
};

// Default metadata area for a volume: 1/16 of it, clamped to
// [kMinMetaSize, kMaxDefaultMetaSize], rounded up to a multiple of `row`
// (stripe unit x member count).
uint64_t default_meta_size(uint64_t volume_size, uint64_t row);

Expected<MkfsResult> make_volume(const MkfsOptions& options);

}  // namespace peregrine
