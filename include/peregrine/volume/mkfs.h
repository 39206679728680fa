// Creating a volume: checks every member, then writes superblocks and an
// all-zero metadata area (the state the metadata layer reads as "fresh").
//
// make_volume() writes nothing to any member until every member has passed
// every check; a refusal names the member and the problem. Writes happen in
// a crash-safe order: zeroing, sync, primary superblocks, sync, backups,
// sync, so an interrupted mkfs never leaves an assemblable half-volume.
//
// Thread rules: called from one thread; it holds exclusive member locks
// while it runs.
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
// Sizing the metadata area (docs/format.md, section 4): room for one file
// per kDefaultBytesPerInode of volume, each file budgeted at
// kMetaBytesPerFile of checkpoint (an inode, its entry with a name of about
// 150 bytes, a few extents). Files with shorter names take less: statfs
// and `peregrine info` count with what the files there really take.
inline constexpr uint64_t kDefaultBytesPerInode = 64 * 1024;
inline constexpr uint64_t kMinBytesPerInode = 1024;
inline constexpr uint64_t kMetaBytesPerFile = 256;

struct MkfsOptions {
  std::vector<std::string> members;  // member index = position here
  uint32_t stripe_unit = kDefaultStripeUnit;
  std::string label;
  std::optional<uint64_t> size;  // create or extend regular-file members to this size
  // At most one of these three: the metadata area's size (rounded up to
  // stripe_unit x member count), or the files it must hold, given directly
  // or as one per bytes_per_inode of volume (the default, at
  // kDefaultBytesPerInode).
  std::optional<uint64_t> meta_size;
  std::optional<uint64_t> inodes;
  std::optional<uint64_t> bytes_per_inode;
  bool force = false;  // overwrite existing signatures and peregrine members
};

struct MkfsResult {
  Superblock superblock;             // member 0's copy; the shared fields hold for all
  uint64_t files_planned = 0;        // files the area was sized for (0 with --meta-size)
  std::vector<std::string> members;  // paths in index order
};

// The smallest metadata area, a multiple of `row` (stripe unit x member
// count) and at least kMinMetaSize, whose checkpoint slots (split as the
// metadata layer splits the area: docs/metadata-format.md, section 1) hold
// `files` files of kMetaBytesPerFile bytes each.
uint64_t meta_size_for_files(uint64_t files, uint64_t row);
// The journal ring's bytes in a metadata area of `meta_size` bytes (the
// metadata layer's default split, meta::MetaLayout::compute, repeated here
// because this layer sits below it): mkfs writes that share out.
uint64_t journal_capacity(uint64_t meta_size);
// The checkpoint body that fits a slot of a metadata area of `meta_size`
// bytes (the metadata layer's split, repeated here for sizing).
uint64_t checkpoint_capacity(uint64_t meta_size);

Expected<MkfsResult> make_volume(const MkfsOptions& options);

}  // namespace peregrine
