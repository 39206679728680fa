// util/little_endian.h: the byte order of every on-disk integer. Known
// bytes for each width, round trips at every offset, and that a put writes
// exactly its own bytes.
#include "peregrine/util/little_endian.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace peregrine {
namespace {

TEST(LittleEndian, LeastSignificantByteFirst) {
  std::array<std::byte, 8> b{};
  put_le64(b, 0, 0x0102030405060708ull);
  const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(static_cast<uint8_t>(b[i]), want[i]) << "byte " << i;
  EXPECT_EQ(get_le64(b, 0), 0x0102030405060708ull);
  EXPECT_EQ(get_le32(b, 0), 0x05060708u);
  EXPECT_EQ(get_le16(b, 0), 0x0708u);
  EXPECT_EQ(get_le(b, 0, 3), 0x060708u);
}

TEST(LittleEndian, RoundTripsEveryWidthAtEveryOffset) {
  const uint64_t values[] = {0, 1, 0xff, 0x100, 0xdeadbeef, 0x8000000000000000ull, ~uint64_t{0}};
  for (int bytes = 1; bytes <= 8; ++bytes) {
    const uint64_t mask = bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
    for (size_t off = 0; off + bytes <= 16; ++off) {
      for (uint64_t v : values) {
        std::array<std::byte, 16> b;
        b.fill(std::byte{0xa5});
        put_le(b, off, v, bytes);
        EXPECT_EQ(get_le(b, off, bytes), v & mask) << bytes << " bytes at " << off;
        for (size_t i = 0; i < b.size(); ++i) {
          if (i < off || i >= off + static_cast<size_t>(bytes)) {
            EXPECT_EQ(b[i], std::byte{0xa5}) << "byte " << i;
          }
        }
      }
    }
  }
}

TEST(LittleEndian, FixedWidthsMatchTheGeneralForm) {
  std::array<std::byte, 14> b{};
  put_le16(b, 0, 0xbeef);
  put_le32(b, 2, 0xcafef00d);
  put_le64(b, 6, 0x0123456789abcdefull);
  EXPECT_EQ(get_le(b, 0, 2), 0xbeefu);
  EXPECT_EQ(get_le(b, 2, 4), 0xcafef00du);
  EXPECT_EQ(get_le(b, 6, 8), 0x0123456789abcdefull);
}

}  // namespace
}  // namespace peregrine
