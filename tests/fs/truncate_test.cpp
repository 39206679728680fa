// truncate down and up: bytes past the new end are gone, and an extension
// reads as zeros (no stale bytes of the old tail), side by side.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class TruncateTest : public CacheModes<SideBySideTest> {};

TEST_P(TruncateTest, DownThenUpReadsZerosBeyondTheOldEnd) {
  const std::string data = pattern(1 << 20, 3);
  same("write 1 MiB", [&](const std::string& r) { return outcome(write_file(r + "/f", data) ? 0 : -1); });
  same("truncate down to 1000 (inside a block)",
       [](const std::string& r) { return outcome(::truncate((r + "/f").c_str(), 1000)); });
  same("truncate up to 3 MiB", [](const std::string& r) { return outcome(::truncate((r + "/f").c_str(), 3 << 20)); });
  std::string got = read_file(at("f"));
  ASSERT_EQ(got.size(), size_t{3} << 20);
  EXPECT_TRUE(got.substr(0, 1000) == data.substr(0, 1000));
  EXPECT_EQ(got.find_first_not_of('\0', 1000), std::string::npos) << "stale bytes after the truncation point";
  expect_same_trees();
}

TEST_P(TruncateTest, FtruncateOnAnOpenFileWithCachedData) {
  const std::string data = pattern(200000, 4);
  same("ftruncate sequence", [&](const std::string& r) {
    Fd fd(::open((r + "/g").c_str(), O_RDWR | O_CREAT, 0644));
    bool ok = write_at(fd.get(), data, 0) && ::ftruncate(fd.get(), 4097) == 0 && ::ftruncate(fd.get(), 150000) == 0 &&
              write_at(fd.get(), std::string("end"), 149997);
    std::string back = read_at(fd.get(), 150000, 0);
    ok = ok && back.size() == 150000 && back.compare(0, 4097, data, 0, 4097) == 0 &&
         back.find_first_not_of('\0', 4097) == 149997;
    return outcome(ok ? 0 : -1);
  });
  same("truncate to zero", [](const std::string& r) {
    struct stat st;
    return ::truncate((r + "/g").c_str(), 0) < 0 || ::stat((r + "/g").c_str(), &st) < 0
               ? outcome(-1)
               : outcome(st.st_size + st.st_blocks);
  });
  same("truncate a missing file: ENOENT",
       [](const std::string& r) { return outcome(::truncate((r + "/nope").c_str(), 0)); });
  same("truncate negative: EINVAL", [](const std::string& r) { return outcome(::truncate((r + "/g").c_str(), -1)); });
  expect_same_trees();
}

TEST_P(TruncateTest, TruncateAcrossStripeUnits) {
  // 1 MiB + a bit spans all four members (128 KiB stripe unit).
  const std::string data = pattern((1 << 20) + 12345, 5);
  same("write", [&](const std::string& r) { return outcome(write_file(r + "/s", data) ? 0 : -1); });
  same("cut in the second stripe unit",
       [](const std::string& r) { return outcome(::truncate((r + "/s").c_str(), 200000)); });
  same("extend again", [](const std::string& r) { return outcome(::truncate((r + "/s").c_str(), (1 << 20) + 12345)); });
  std::string got = read_file(at("s"));
  ASSERT_EQ(got.size(), data.size());
  EXPECT_TRUE(got.compare(0, 200000, data, 0, 200000) == 0);
  EXPECT_EQ(got.find_first_not_of('\0', 200000), std::string::npos);
  expect_same_trees();
}

PEREGRINE_FOR_CACHE_MODES(TruncateTest);

}  // namespace
}  // namespace peregrine::fstest
