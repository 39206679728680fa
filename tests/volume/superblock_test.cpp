// Superblock codec: round trips, the byte layout of docs/format.md, and
// refusal of every malformed block.
#include "peregrine/volume/superblock.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "peregrine/util/crc32c.h"

namespace peregrine {
namespace {

Uuid uuid_of(uint8_t seed) {
  Uuid u;
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(seed * 17 + i + 1);
  return u;
}

Superblock sample() {
  Superblock sb;
  sb.features_compat = 0x5;  // unknown compat bits are kept, not refused
  sb.volume_uuid = uuid_of(1);
  for (uint8_t i = 0; i < 3; ++i) sb.member_uuids.push_back(uuid_of(10 + i));
  sb.member_index = 2;
  sb.member_uuid = sb.member_uuids[2];
  sb.stripe_unit = 64 * 1024;
  sb.data_start = 1 << 20;
  sb.member_data_size = 100ull * 64 * 1024;
  sb.meta_size = 30ull * 3 * 64 * 1024;
  sb.creation_time = 1795000000;
  sb.generation = 7;
  sb.label = "fast-scratch";
  return sb;
}

std::vector<std::byte> encode(const Superblock& sb) {
  std::vector<std::byte> b(kSuperblockSize);
  encode_superblock(sb, b);
  return b;
}

uint32_t le32(const std::vector<std::byte>& b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[off + i]) << (8 * i);
  return v;
}
uint64_t le64(const std::vector<std::byte>& b, size_t off) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[off + i]) << (8 * i);
  return v;
}

void reseal(std::vector<std::byte>& b) {
  uint32_t crc = crc32c(std::span<const std::byte>(b).first(kSuperblockSize - 4));
  for (int i = 0; i < 4; ++i) b[kSuperblockSize - 4 + i] = std::byte(static_cast<uint8_t>(crc >> (8 * i)));
}
void set32(std::vector<std::byte>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
void set64(std::vector<std::byte>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}

TEST(SuperblockTest, DecodeOfEncodeIsIdentity) {
  Superblock sb = sample();
  auto bytes = encode(sb);
  auto back = decode_superblock(bytes);
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, sb);
  EXPECT_EQ(encode(*back), bytes);
}

TEST(SuperblockTest, MaximalVolumeRoundTrips) {
  Superblock sb = sample();
  sb.member_uuids.clear();
  for (uint32_t i = 0; i < kMaxMembers; ++i) sb.member_uuids.push_back(uuid_of(static_cast<uint8_t>(100 + i)));
  sb.member_index = kMaxMembers - 1;
  sb.member_uuid = sb.member_uuids.back();
  sb.meta_size = uint64_t{sb.stripe_unit} * kMaxMembers * 4;
  sb.label = std::string(kMaxLabelBytes, 'x');
  auto back = decode_superblock(encode(sb));
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, sb);
}

// The offsets documented in docs/format.md, checked on the encoded bytes.
TEST(SuperblockTest, ByteLayoutMatchesFormatDoc) {
  Superblock sb = sample();
  auto b = encode(sb);
  EXPECT_EQ(std::memcmp(b.data(), "PEREGRIN", 8), 0);
  EXPECT_EQ(le32(b, 8), kFormatVersion);
  EXPECT_EQ(le32(b, 12), kLayoutVersion);
  EXPECT_EQ(le64(b, 16), 0x5u);
  EXPECT_EQ(std::memcmp(b.data() + 40, sb.volume_uuid.bytes.data(), 16), 0);
  EXPECT_EQ(std::memcmp(b.data() + 56, sb.member_uuid.bytes.data(), 16), 0);
  EXPECT_EQ(le32(b, 72), 2u);
  EXPECT_EQ(le32(b, 76), 3u);
  EXPECT_EQ(le32(b, 80), 4096u);
  EXPECT_EQ(le32(b, 84), 64u * 1024);
  EXPECT_EQ(le64(b, 88), 1u << 20);
  EXPECT_EQ(le64(b, 96), sb.member_data_size);
  EXPECT_EQ(le64(b, 104), 0u);
  EXPECT_EQ(le64(b, 112), sb.meta_size);
  EXPECT_EQ(le64(b, 120), 1795000000u);
  EXPECT_EQ(le64(b, 128), 7u);
  EXPECT_EQ(std::memcmp(b.data() + 136, "fast-scratch", 12), 0);
  EXPECT_EQ(b[136 + 12], std::byte{0});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(b.data() + 256 + 16 * i, sb.member_uuids[i].bytes.data(), 16), 0) << i;
  EXPECT_EQ(b[256 + 16 * 3], std::byte{0});
  EXPECT_EQ(le32(b, 4092), crc32c(b.data(), 4092));
}

TEST(SuperblockTest, EverySingleBitFlipIsRefused) {
  auto good = encode(sample());
  for (size_t bit = 0; bit < kSuperblockSize * 8; ++bit) {
    auto b = good;
    b[bit / 8] ^= std::byte(static_cast<uint8_t>(1u << (bit % 8)));
    ASSERT_FALSE(decode_superblock(b)) << "flipped bit " << bit;
  }
}

TEST(SuperblockTest, TornBlockIsRefusedAsChecksumMismatch) {
  auto b = encode(sample());
  std::fill(b.begin() + 2048, b.end(), std::byte{0});
  auto r = decode_superblock(b);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("checksum mismatch"), std::string::npos) << r.status().message();
}

TEST(SuperblockTest, WrongSizeAndMissingMagicAreRefused) {
  auto b = encode(sample());
  auto short_block = decode_superblock(std::span<const std::byte>(b).first(4000));
  ASSERT_FALSE(short_block);
  EXPECT_NE(short_block.status().message().find("4000 bytes"), std::string::npos);
  std::vector<std::byte> zeros(kSuperblockSize);
  auto none = decode_superblock(zeros);
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("magic missing"), std::string::npos);
  EXPECT_FALSE(has_superblock_magic(zeros));
  EXPECT_TRUE(has_superblock_magic(b));
}

// A block with a valid checksum whose fields break a rule of the format.
struct BadField {
  const char* name;
  std::function<void(std::vector<std::byte>&)> edit;
  const char* expected;
};

TEST(SuperblockTest, ResealedBadFieldsAreRefusedWithTheFieldNamed) {
  const BadField cases[] = {
      {"format version", [](auto& b) { set32(b, 8, 2); }, "unsupported format version 2"},
      {"layout version", [](auto& b) { set32(b, 12, 9); }, "unsupported layout version 9"},
      {"incompat feature", [](auto& b) { set64(b, 32, 0x100); }, "unsupported incompatible features 0x100"},
      {"zero members", [](auto& b) { set32(b, 76, 0); }, "member count 0"},
      {"too many members", [](auto& b) { set32(b, 76, 65); }, "member count 65"},
      {"index past count", [](auto& b) { set32(b, 72, 3); }, "member index 3"},
      {"block size", [](auto& b) { set32(b, 80, 512); }, "block size 512"},
      {"stripe unit not 2^n", [](auto& b) { set32(b, 84, 12288); }, "stripe unit 12288"},
      {"stripe unit too big", [](auto& b) { set32(b, 84, 2 << 20); }, "stripe unit 2097152"},
      {"data start in header", [](auto& b) { set64(b, 88, 4096); }, "data start 4096"},
      {"member data not in units", [](auto& b) { set64(b, 96, 100ull * 65536 + 4096); }, "member data size"},
      {"meta offset", [](auto& b) { set64(b, 104, 65536); }, "metadata offset"},
      {"meta size not rows", [](auto& b) { set64(b, 112, 65536); }, "metadata size 65536"},
      {"meta size fills volume", [](auto& b) { set64(b, 112, 300ull * 65536); }, "metadata size"},
      {"generation 0", [](auto& b) { set64(b, 128, 0); }, "generation is 0"},
      {"nil volume uuid", [](auto& b) { std::fill(b.begin() + 40, b.begin() + 56, std::byte{0}); },
       "volume UUID is nil"},
      {"member uuid not in list", [](auto& b) { b[56] ^= std::byte{1}; }, "is not entry 2"},
      {"member uuid listed twice", [](auto& b) { std::copy(b.begin() + 256, b.begin() + 272, b.begin() + 272); },
       "listed twice"},
      {"label unterminated", [](auto& b) { std::fill(b.begin() + 136, b.begin() + 200, std::byte{'a'}); },
       "label is not NUL-terminated"},
      {"label padding", [](auto& b) { b[199] = std::byte{'z'}; }, "label padding"},
      {"unused member slot", [](auto& b) { b[256 + 16 * 3 + 5] = std::byte{1}; }, "unused member UUID slots"},
      {"restripe record without the feature", [](auto& b) { b[210] = std::byte{1}; },
       "restripe record set without the restripe feature"},
      {"restripe onto fewer members",
       [](auto& b) {
         set64(b, 32, kIncompatRestripe);
         set32(b, 200, 3);
       },
       "is not onto more members"},
      {"restripe cursor past the end",
       [](auto& b) {
         set64(b, 32, kIncompatRestripe);
         set32(b, 200, 1);
         set64(b, 208, 101);
       },
       "restripe cursor 101"},
      {"unknown incompat before reserved bytes",
       [](auto& b) {
         set64(b, 32, 0x100);
         b[220] = std::byte{1};
       },
       "unsupported incompatible features 0x100"},
      {"reserved bytes in the restripe record", [](auto& b) { b[205] = std::byte{1}; }, "reserved bytes"},
      {"reserved bytes 1", [](auto& b) { b[220] = std::byte{1}; }, "reserved bytes"},
      {"reserved bytes 2", [](auto& b) { b[4000] = std::byte{1}; }, "reserved bytes"},
  };
  auto good = encode(sample());
  for (const BadField& c : cases) {
    auto b = good;
    c.edit(b);
    reseal(b);
    auto r = decode_superblock(b);
    ASSERT_FALSE(r) << c.name;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << c.name << ": " << r.status().message();
  }
}

// grow --add: the restripe record at 200 (old member count) and 208
// (cursor), and a metadata area of partial rows after it.
TEST(SuperblockTest, RestripeRecordRoundTripsAtItsOffsets) {
  Superblock sb = sample();
  sb.features_incompat = kIncompatRestripe;
  sb.restripe_old_count = 1;
  sb.meta_size = 30ull * 64 * 1024;  // rows of the old member count
  sb.restripe_cursor = 42;
  auto b = encode(sb);
  EXPECT_EQ(le64(b, 32), kIncompatRestripe);
  EXPECT_EQ(le32(b, 200), 1u);
  EXPECT_EQ(le32(b, 204), 0u);
  EXPECT_EQ(le64(b, 208), 42u);
  auto r = decode_superblock(b);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(*r, sb);
  EXPECT_TRUE(r->restriping());

  Superblock done = sample();
  done.meta_size = 31ull * 64 * 1024;  // not whole rows of 3
  EXPECT_FALSE(validate_superblock(done));
  done.features_incompat = kIncompatMetaPartialRow;
  auto d = decode_superblock(encode(done));
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_EQ(*d, done);
}

TEST(SuperblockTest, UnknownReadOnlyCompatFeatureStillDecodes) {
  Superblock sb = sample();
  sb.features_ro_compat = 0x1;
  auto r = decode_superblock(encode(sb));
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->features_ro_compat, 0x1u);
}

TEST(SuperblockTest, ValidateRefusesLabelsTheFormatCannotHold) {
  Superblock sb = sample();
  sb.label = std::string(kMaxLabelBytes + 1, 'x');
  EXPECT_FALSE(validate_superblock(sb));
  sb.label = std::string("a\0b", 3);
  EXPECT_FALSE(validate_superblock(sb));
}

}  // namespace
}  // namespace peregrine
