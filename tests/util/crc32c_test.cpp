// crc32c: the standard check value and chaining.
#include "peregrine/util/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>

namespace peregrine {
namespace {

TEST(Crc32c, MatchesStandardCheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(s, std::strlen(s)), 0xE3069283u);
}

TEST(Crc32c, EmptyInputIsZero) { EXPECT_EQ(crc32c("", 0), 0u); }

TEST(Crc32c, ChainingEqualsOneShot) {
  const char* s = "the quick brown fox jumps over the lazy dog";
  size_t n = std::strlen(s);
  EXPECT_EQ(crc32c(s + 10, n - 10, crc32c(s, 10)), crc32c(s, n));
}

TEST(Crc32c, DetectsSingleBitFlip) {
  char buf[64] = {};
  uint32_t a = crc32c(buf, sizeof buf);
  buf[17] ^= 0x10;
  EXPECT_NE(crc32c(buf, sizeof buf), a);
}

}  // namespace
}  // namespace peregrine
