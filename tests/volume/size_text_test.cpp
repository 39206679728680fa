// Size text: the K/M/G/T suffixes mkfs accepts and the sizes tools print.
#include "peregrine/volume/size_text.h"

#include <gtest/gtest.h>

namespace peregrine {
namespace {

TEST(SizeTextTest, ParsesBinarySuffixes) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("64K"), 65536u);
  EXPECT_EQ(*parse_size("64k"), 65536u);
  EXPECT_EQ(*parse_size("1M"), 1u << 20);
  EXPECT_EQ(*parse_size("1MiB"), 1u << 20);
  EXPECT_EQ(*parse_size("2G"), 2ull << 30);
  EXPECT_EQ(*parse_size("3TB"), 3ull << 40);
}

TEST(SizeTextTest, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "K", "-1", "1.5M", "12Q", "1Mx", "99999999999999999999", "16777216T", " 1"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
  }
}

TEST(SizeTextTest, FormatsWithTheLargestExactUnit) {
  EXPECT_EQ(format_size(128 * 1024), "128 KiB");
  EXPECT_EQ(format_size(3ull << 30), "3 GiB");
  EXPECT_EQ(format_size(1536ull << 20), "1536 MiB");
  EXPECT_EQ(format_size(4097), "4097 bytes");
  EXPECT_EQ(format_size(0), "0 bytes");
}

}  // namespace
}  // namespace peregrine
