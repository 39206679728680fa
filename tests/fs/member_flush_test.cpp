// What an fsync asks of the drives, on block devices (loop devices, whose
// flushes the block layer counts in /sys/block/NAME/stat): every member
// that completed a write since its last flush is flushed before fsync
// returns, so its cache holds nothing the fsync promised; a member that
// wrote nothing is never flushed. Drives are assumed to have a volatile
// write cache and neither FUA nor power-loss protection
// (docs/metadata-format.md, section 5).
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fs_test_util.h"
#include "loop_volume.h"

namespace peregrine::fstest {
namespace {

constexpr uint64_t kUnit = 128 << 10;  // mkfs's default stripe unit

// Writes and flushes one block device has completed since it appeared.
struct DeviceCounts {
  uint64_t writes = 0;
  uint64_t flushes = 0;
  bool known = false;  // the kernel counts flushes (fields 16-17, 5.5 and later)
};

DeviceCounts counts_of(const std::string& device) {
  const std::string name = device.substr(device.rfind('/') + 1);
  std::ifstream in("/sys/block/" + name + "/stat");
  std::vector<uint64_t> f;
  uint64_t v;
  while (in >> v) f.push_back(v);
  DeviceCounts c;
  if (f.size() < 17) return c;
  c.writes = f[4];
  c.flushes = f[15];
  c.known = true;
  return c;
}

class MemberFlushTest : public LoopDeviceVolumeTest {
 protected:
  std::vector<DeviceCounts> snapshot() {
    std::vector<DeviceCounts> out;
    for (const std::string& d : devices_) out.push_back(counts_of(d));
    return out;
  }
  // Over [before, after): every member that wrote was flushed after it, and
  // one that wrote nothing was not flushed. Returns how many wrote.
  int expect_flushed_exactly_the_writers(const std::vector<DeviceCounts>& before,
                                         const std::vector<DeviceCounts>& after, const char* what) {
    int wrote = 0;
    for (size_t i = 0; i < devices_.size(); ++i) {
      const uint64_t writes = after[i].writes - before[i].writes;
      const uint64_t flushes = after[i].flushes - before[i].flushes;
      if (writes > 0) {
        ++wrote;
        EXPECT_GE(flushes, 1u) << what << ": member " << i << " wrote " << writes << " times and was not flushed";
      } else {
        EXPECT_EQ(flushes, 0u) << what << ": member " << i << " wrote nothing and was flushed";
      }
    }
    return wrote;
  }
};

TEST_F(MemberFlushTest, FsyncFlushesTheMembersItWroteAndNoOther) {
  ASSERT_NO_FATAL_FAILURE(make_and_mount({"-o", "fuse.cache=direct"}));
  if (!counts_of(devices_[0]).known) GTEST_SKIP() << "this kernel counts no flushes in /sys/block/*/stat";

  // Four stripe units: data on every member, then its journal record.
  const std::string data = pattern(4 * kUnit, 71);
  Fd fd(::open(volume_->at("f").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  std::vector<DeviceCounts> s0 = snapshot();
  ASSERT_TRUE(write_at(fd.get(), data, 0)) << std::strerror(errno);
  ASSERT_EQ(::fsync(fd.get()), 0) << std::strerror(errno);
  std::vector<DeviceCounts> s1 = snapshot();
  EXPECT_EQ(expect_flushed_exactly_the_writers(s0, s1, "a new file's fsync"), 4);

  // One block rewritten in place and fdatasync'd: its member, and no
  // journal record (nothing but the times changed), so one member only.
  const std::string block = pattern(4096, 72);
  ASSERT_TRUE(write_at(fd.get(), block, static_cast<off_t>(2 * kUnit))) << std::strerror(errno);
  ASSERT_EQ(::fdatasync(fd.get()), 0) << std::strerror(errno);
  std::vector<DeviceCounts> s2 = snapshot();
  EXPECT_EQ(expect_flushed_exactly_the_writers(s1, s2, "a rewrite's fdatasync"), 1);

  // An fsync with nothing new to make durable writes and flushes nothing.
  ASSERT_EQ(::fdatasync(fd.get()), 0) << std::strerror(errno);
  std::vector<DeviceCounts> s3 = snapshot();
  EXPECT_EQ(expect_flushed_exactly_the_writers(s2, s3, "a second fdatasync"), 0);

  fd.reset();
  ASSERT_EQ(volume_->unmount(), 0);
  ASSERT_EQ(volume_->mount({}, devices_).code, 0);
  EXPECT_TRUE(read_file(volume_->at("f")) == data.substr(0, 2 * kUnit) + block + data.substr(2 * kUnit + 4096));
}

}  // namespace
}  // namespace peregrine::fstest
