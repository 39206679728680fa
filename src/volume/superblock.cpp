#include "peregrine/volume/superblock.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "member_refusal.h"
#include "peregrine/util/crc32c.h"
#include "peregrine/util/little_endian.h"

namespace peregrine {
namespace {

// Byte offsets of docs/format.md, section "Superblock".
constexpr size_t kOffMagic = 0;
constexpr size_t kOffFormatVersion = 8;
constexpr size_t kOffLayoutVersion = 12;
constexpr size_t kOffCompat = 16;
constexpr size_t kOffRoCompat = 24;
constexpr size_t kOffIncompat = 32;
constexpr size_t kOffVolumeUuid = 40;
constexpr size_t kOffMemberUuid = 56;
constexpr size_t kOffMemberIndex = 72;
constexpr size_t kOffMemberCount = 76;
constexpr size_t kOffBlockSize = 80;
constexpr size_t kOffStripeUnit = 84;
constexpr size_t kOffDataStart = 88;
constexpr size_t kOffMemberDataSize = 96;
constexpr size_t kOffMetaOffset = 104;
constexpr size_t kOffMetaSize = 112;
constexpr size_t kOffCreationTime = 120;
constexpr size_t kOffGeneration = 128;
constexpr size_t kOffLabel = 136;
constexpr size_t kLabelField = kMaxLabelBytes + 1;
constexpr size_t kOffRestripeOldCount = kOffLabel + kLabelField;  // 200
constexpr size_t kOffRestripeCursor = kOffRestripeOldCount + 8;   // 208 (204..207 zero)
constexpr size_t kOffReserved1 = kOffRestripeCursor + 8;          // 216
constexpr size_t kOffMemberUuids = 256;
constexpr size_t kOffReserved2 = kOffMemberUuids + 16 * kMaxMembers;  // 1280
constexpr size_t kOffCrc = kSuperblockSize - 4;                       // 4092

constexpr char kMagic[8] = {'P', 'E', 'R', 'E', 'G', 'R', 'I', 'N'};

static_assert(kOffReserved1 <= kOffMemberUuids);
static_assert(kOffRestripeOldCount == 200 && kOffReserved1 == 216);
static_assert(kOffReserved2 <= kOffCrc);

void put_u32(std::span<std::byte> b, size_t off, uint32_t v) { put_le32(b, off, v); }
void put_u64(std::span<std::byte> b, size_t off, uint64_t v) { put_le64(b, off, v); }
void put_uuid(std::span<std::byte> b, size_t off, const Uuid& u) {
  for (size_t i = 0; i < 16; ++i) b[off + i] = std::byte(u.bytes[i]);
}
uint32_t get_u32(std::span<const std::byte> b, size_t off) { return get_le32(b, off); }
uint64_t get_u64(std::span<const std::byte> b, size_t off) { return get_le64(b, off); }
Uuid get_uuid(std::span<const std::byte> b, size_t off) {
  Uuid u;
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(b[off + i]);
  return u;
}
bool all_zero(std::span<const std::byte> b) {
  for (std::byte x : b)
    if (x != std::byte{0}) return false;
  return true;
}

Status bad(std::string what) { return Status::error(EINVAL, std::move(what)); }

}  // namespace

Status validate_superblock(const Superblock& sb) {
  if (sb.format_version != kFormatVersion)
    return bad("unsupported format version " + std::to_string(sb.format_version) + " (this build reads " +
               std::to_string(kFormatVersion) + ")");
  if (sb.layout_version != kLayoutVersion)
    return bad("unsupported layout version " + std::to_string(sb.layout_version) + " (this build reads " +
               std::to_string(kLayoutVersion) + ")");
  if (uint64_t unknown = sb.features_incompat & ~kKnownIncompatFeatures; unknown != 0)
    return bad("unsupported incompatible features " + hex_number(unknown));
  uint32_t n = sb.member_count();
  if (n == 0 || n > kMaxMembers)
    return bad("member count " + std::to_string(n) + " out of range 1.." + std::to_string(kMaxMembers));
  if (sb.member_index >= n)
    return bad("member index " + std::to_string(sb.member_index) + " not below member count " + std::to_string(n));
  if (sb.volume_uuid.is_nil()) return bad("volume UUID is nil");
  std::set<Uuid> seen;
  for (uint32_t i = 0; i < n; ++i) {
    if (sb.member_uuids[i].is_nil()) return bad("member UUID " + std::to_string(i) + " is nil");
    if (!seen.insert(sb.member_uuids[i]).second)
      return bad("member UUID " + sb.member_uuids[i].to_string() + " listed twice");
  }
  if (sb.member_uuid != sb.member_uuids[sb.member_index])
    return bad("member UUID " + sb.member_uuid.to_string() + " is not entry " + std::to_string(sb.member_index) +
               " of the member list");
  if (sb.block_size != kBlockSize)
    return bad("block size " + std::to_string(sb.block_size) + " is not " + std::to_string(kBlockSize));
  uint32_t u = sb.stripe_unit;
  if (u < kMinStripeUnit || u > kMaxStripeUnit || (u & (u - 1)) != 0)
    return bad("stripe unit " + std::to_string(u) + " is not a power of two in 4096..1048576");
  if (sb.data_start < kBackupSuperblockOffset + kSuperblockSize || sb.data_start % sb.block_size != 0)
    return bad("data start " + std::to_string(sb.data_start) + " overlaps the superblocks or is not block aligned");
  if (sb.member_data_size == 0 || sb.member_data_size % u != 0)
    return bad("member data size " + std::to_string(sb.member_data_size) +
               " is not a positive multiple of the stripe unit");
  // Keep every byte offset representable as off_t, on members and in the volume.
  constexpr uint64_t kMaxOffset = uint64_t{1} << 62;
  if (sb.data_start > kMaxOffset || sb.member_data_size > kMaxOffset / kMaxMembers)
    return bad("data start or member data size too large");
  if (sb.restriping()) {
    const uint64_t units = sb.member_data_size / u * sb.restripe_old_count;
    if (sb.restripe_old_count == 0 || sb.restripe_old_count >= n)
      return bad("restripe from " + std::to_string(sb.restripe_old_count) + " members onto " + std::to_string(n) +
                 " is not onto more members");
    if (sb.restripe_cursor > units)
      return bad("restripe cursor " + std::to_string(sb.restripe_cursor) + " is past the " + std::to_string(units) +
                 " stripe units of the data area");
  } else if (sb.restripe_old_count != 0 || sb.restripe_cursor != 0) {
    return bad("restripe record set without the restripe feature");
  }
  // Until a restripe is committed the metadata area keeps the rows of the
  // old member count.
  const uint32_t row_members = sb.restriping() ? sb.restripe_old_count : n;
  uint64_t volume = sb.member_data_size * row_members;
  uint64_t row = (sb.features_incompat & kIncompatMetaPartialRow) ? u : uint64_t{u} * row_members;
  if (sb.meta_offset != 0) return bad("metadata offset " + std::to_string(sb.meta_offset) + " is not 0");
  if (sb.meta_size == 0 || sb.meta_size % row != 0 || sb.meta_size >= volume)
    return bad("metadata size " + std::to_string(sb.meta_size) + " is not a positive multiple of stripe unit x " +
               ((sb.features_incompat & kIncompatMetaPartialRow) ? "1" : "member count") + " below the volume size");
  if (sb.generation == 0) return bad("generation is 0");
  if (sb.label.size() > kMaxLabelBytes) return bad("label longer than " + std::to_string(kMaxLabelBytes) + " bytes");
  if (sb.label.find('\0') != std::string::npos) return bad("label contains a NUL byte");
  return Status::ok();
}

void encode_superblock(const Superblock& sb, std::span<std::byte> out) {
  std::memset(out.data(), 0, kSuperblockSize);
  std::memcpy(out.data() + kOffMagic, kMagic, sizeof kMagic);
  put_u32(out, kOffFormatVersion, sb.format_version);
  put_u32(out, kOffLayoutVersion, sb.layout_version);
  put_u64(out, kOffCompat, sb.features_compat);
  put_u64(out, kOffRoCompat, sb.features_ro_compat);
  put_u64(out, kOffIncompat, sb.features_incompat);
  put_uuid(out, kOffVolumeUuid, sb.volume_uuid);
  put_uuid(out, kOffMemberUuid, sb.member_uuid);
  put_u32(out, kOffMemberIndex, sb.member_index);
  put_u32(out, kOffMemberCount, sb.member_count());
  put_u32(out, kOffBlockSize, sb.block_size);
  put_u32(out, kOffStripeUnit, sb.stripe_unit);
  put_u64(out, kOffDataStart, sb.data_start);
  put_u64(out, kOffMemberDataSize, sb.member_data_size);
  put_u64(out, kOffMetaOffset, sb.meta_offset);
  put_u64(out, kOffMetaSize, sb.meta_size);
  put_u64(out, kOffCreationTime, sb.creation_time);
  put_u64(out, kOffGeneration, sb.generation);
  put_u32(out, kOffRestripeOldCount, sb.restripe_old_count);
  put_u64(out, kOffRestripeCursor, sb.restripe_cursor);
  std::memcpy(out.data() + kOffLabel, sb.label.data(), sb.label.size());
  for (size_t i = 0; i < sb.member_uuids.size(); ++i) put_uuid(out, kOffMemberUuids + 16 * i, sb.member_uuids[i]);
  put_u32(out, kOffCrc, crc32c(out.first(kOffCrc)));
}

bool has_superblock_magic(std::span<const std::byte> block) {
  return block.size() >= sizeof kMagic && std::memcmp(block.data() + kOffMagic, kMagic, sizeof kMagic) == 0;
}

Expected<Superblock> decode_superblock(std::span<const std::byte> b) {
  if (b.size() != kSuperblockSize)
    return bad("superblock is " + std::to_string(b.size()) + " bytes, not " + std::to_string(kSuperblockSize));
  if (!has_superblock_magic(b)) return bad("no peregrine superblock (magic missing)");
  uint32_t stored = get_u32(b, kOffCrc);
  uint32_t computed = crc32c(b.first(kOffCrc));
  if (stored != computed)
    return bad("superblock checksum mismatch (stored " + hex_number(stored) + ", computed " + hex_number(computed) +
               ")");

  // Versions first: a newer format may give every other field a new meaning.
  Superblock sb;
  sb.format_version = get_u32(b, kOffFormatVersion);
  sb.layout_version = get_u32(b, kOffLayoutVersion);
  if (sb.format_version != kFormatVersion || sb.layout_version != kLayoutVersion) return validate_superblock(sb);

  sb.features_compat = get_u64(b, kOffCompat);
  sb.features_ro_compat = get_u64(b, kOffRoCompat);
  sb.features_incompat = get_u64(b, kOffIncompat);
  // Unknown incompat features before any other rule: a newer feature may
  // give reserved bytes a meaning, and "unsupported" is the true answer.
  if (uint64_t unknown = sb.features_incompat & ~kKnownIncompatFeatures; unknown != 0)
    return bad("unsupported incompatible features " + hex_number(unknown));
  sb.volume_uuid = get_uuid(b, kOffVolumeUuid);
  sb.member_uuid = get_uuid(b, kOffMemberUuid);
  sb.member_index = get_u32(b, kOffMemberIndex);
  uint32_t n = get_u32(b, kOffMemberCount);
  if (n == 0 || n > kMaxMembers)
    return bad("member count " + std::to_string(n) + " out of range 1.." + std::to_string(kMaxMembers));
  sb.block_size = get_u32(b, kOffBlockSize);
  sb.stripe_unit = get_u32(b, kOffStripeUnit);
  sb.data_start = get_u64(b, kOffDataStart);
  sb.member_data_size = get_u64(b, kOffMemberDataSize);
  sb.meta_offset = get_u64(b, kOffMetaOffset);
  sb.meta_size = get_u64(b, kOffMetaSize);
  sb.creation_time = get_u64(b, kOffCreationTime);
  sb.generation = get_u64(b, kOffGeneration);
  sb.restripe_old_count = get_u32(b, kOffRestripeOldCount);
  sb.restripe_cursor = get_u64(b, kOffRestripeCursor);
  if (get_u32(b, kOffRestripeOldCount + 4) != 0) return bad("reserved bytes are not zero");

  auto label = b.subspan(kOffLabel, kLabelField);
  size_t len = 0;
  while (len < label.size() && label[len] != std::byte{0}) ++len;
  if (len > kMaxLabelBytes) return bad("label is not NUL-terminated");
  if (!all_zero(label.subspan(len))) return bad("label padding is not zero");
  sb.label.assign(reinterpret_cast<const char*>(label.data()), len);

  sb.member_uuids.reserve(n);
  for (uint32_t i = 0; i < n; ++i) sb.member_uuids.push_back(get_uuid(b, kOffMemberUuids + 16 * i));
  // Unused and reserved bytes must be zero so that decode(encode(x)) == x
  // holds both ways and a later format can give them a meaning.
  if (!all_zero(b.subspan(kOffMemberUuids + 16 * n, 16 * (kMaxMembers - n))))
    return bad("unused member UUID slots are not zero");
  if (!all_zero(b.subspan(kOffReserved1, kOffMemberUuids - kOffReserved1)) ||
      !all_zero(b.subspan(kOffReserved2, kOffCrc - kOffReserved2)))
    return bad("reserved bytes are not zero");

  if (Status s = validate_superblock(sb); !s) return s;
  return sb;
}

}  // namespace peregrine
