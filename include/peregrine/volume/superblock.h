// The superblock: the 4 KiB record on every member that says which volume
// the member belongs to, where it sits in the volume, and the volume's
// geometry. Byte layout and rules: docs/format.md.
//
// Every member holds two copies: the primary at member offset 0 and the
// backup at kBackupSuperblockOffset. encode/decode are explicit
// little-endian field by field (never a struct memcpy), so the format does
// not depend on the compiler or the host. decode refuses every malformed
// block with a message; a block that decodes re-encodes to the same bytes.
//
// Thread rules: pure functions on plain values, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "peregrine/util/result.h"
#include "peregrine/volume/geometry.h"
#include "peregrine/volume/uuid.h"

namespace peregrine {

inline constexpr size_t kSuperblockSize = 4096;
inline constexpr uint64_t kPrimarySuperblockOffset = 0;
// Fixed, not relative to the member's end: it must be found without trusting
// the primary, and a block device's size may change under us.
inline constexpr uint64_t kBackupSuperblockOffset = 512 * 1024;

inline constexpr uint32_t kFormatVersion = 1;  // encoding of this block
inline constexpr uint32_t kLayoutVersion = 1;  // mapping of logical space to members (RAID-0)
inline constexpr uint32_t kBlockSize = 4096;
inline constexpr uint32_t kMinStripeUnit = 4096;
inline constexpr uint32_t kMaxStripeUnit = 1024 * 1024;
// Bounded so that the ordered member list fits in the one 4 KiB block.
inline constexpr uint32_t kMaxMembers = 64;
inline constexpr size_t kMaxLabelBytes = 63;  // stored NUL-padded in 64 bytes

// Feature bits. A reader refuses a volume with an incompat bit it does not
// know, may only read a volume with an unknown ro_compat bit, and ignores
// unknown compat bits (docs/format.md, section 2).
//
// kIncompatRestripe: `peregrine grow --add` is moving the data area from
// restripe_old_count members onto member_count members; logical stripe
// units below restripe_cursor are already in the new layout. Nothing but
// the restripe itself may use such a volume (assembly refuses it).
// kIncompatMetaPartialRow: meta_size is a multiple of the stripe unit but
// not of a whole stripe row (a volume restriped onto more members); a
// reader that assumes whole rows would misplace the metadata area.
inline constexpr uint64_t kIncompatRestripe = 1;
inline constexpr uint64_t kIncompatMetaPartialRow = 2;
inline constexpr uint64_t kKnownCompatFeatures = 0;
inline constexpr uint64_t kKnownRoCompatFeatures = 0;
inline constexpr uint64_t kKnownIncompatFeatures = kIncompatRestripe | kIncompatMetaPartialRow;

struct Superblock {
  uint32_t format_version = kFormatVersion;
  uint32_t layout_version = kLayoutVersion;
  uint64_t features_compat = 0;
  uint64_t features_ro_compat = 0;
  uint64_t features_incompat = 0;
  Uuid volume_uuid;
  Uuid member_uuid;  // == member_uuids[member_index]
  uint32_t member_index = 0;
  std::vector<Uuid> member_uuids;  // every member in index order; size() = member count
  uint32_t block_size = kBlockSize;
  uint32_t stripe_unit = 0;
  uint64_t data_start = 0;        // member offset where striped data starts
  uint64_t member_data_size = 0;  // striped bytes per member (same on all members)
  uint64_t meta_offset = 0;       // logical offset of the metadata area (0 in version 1)
  uint64_t meta_size = 0;         // logical bytes of the metadata area
  uint64_t creation_time = 0;     // seconds since the Unix epoch, UTC
  uint64_t generation = 1;        // +1 per rewrite; the primary is written first
  std::string label;              // up to kMaxLabelBytes bytes, no NUL
  // The restripe record (only with kIncompatRestripe, else 0): the member
  // count the data area had, and how many stripe units of it, from logical
  // unit 0 on, are already placed for member_count() members.
  uint32_t restripe_old_count = 0;
  uint64_t restripe_cursor = 0;

  bool restriping() const { return (features_incompat & kIncompatRestripe) != 0; }
  uint32_t member_count() const { return static_cast<uint32_t>(member_uuids.size()); }
  VolumeGeometry geometry() const { return {member_count(), stripe_unit, data_start, member_data_size}; }
  // The bytes of the member this superblock describes: header + data area.
  uint64_t member_bytes_needed() const { return data_start + member_data_size; }

  bool operator==(const Superblock&) const = default;
};

// Checks every rule of docs/format.md except magic and checksum. The message
// names the offending field.
Status validate_superblock(const Superblock& sb);

// REQUIRES: validate_superblock(sb) is ok, out.size() == kSuperblockSize.
void encode_superblock(const Superblock& sb, std::span<std::byte> out);

// Refuses a block of the wrong size, without the magic, with a bad checksum,
// an unsupported version or incompat feature, or any field out of its rules.
Expected<Superblock> decode_superblock(std::span<const std::byte> block);

// True when the block starts with the superblock magic, whether or not the
// rest is valid (mkfs refuses to overwrite even a damaged peregrine member).
bool has_superblock_magic(std::span<const std::byte> block);

}  // namespace peregrine
