// A test volume over four loop devices (block devices backed by sparse
// files in the volume's directory), for behaviour that needs real block
// devices: BLKDISCARD, cache flushes the block layer counts. Skips when the
// machine cannot mount or attach loop devices.
//
// Thread rules: a gtest fixture; its test's thread only.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {

class LoopDeviceVolumeTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kBackingBytes = 64 << 20;

  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    volume_.emplace();
    for (int i = 0; i < 4; ++i) {
      std::string backing = volume_->dir() + "/backing" + std::to_string(i);
      Fd f(::open(backing.c_str(), O_RDWR | O_CREAT, 0600));
      ASSERT_TRUE(f.ok());
      ASSERT_EQ(::ftruncate(f.get(), kBackingBytes), 0);
      RunResult r = run({"losetup", "-f", "--show", backing});
      if (r.code != 0) GTEST_SKIP() << "losetup cannot attach a loop device: " << r.describe();
      backing_.push_back(backing);
      devices_.push_back(r.out.substr(0, r.out.find('\n')));
    }
  }
  void TearDown() override {
    if (volume_ && volume_->mounted()) volume_->unmount();
    for (const std::string& d : devices_) run({"losetup", "-d", d});
    volume_.reset();
  }
  // mkfs over the devices, then a mount of them with `options`.
  void make_and_mount(const std::vector<std::string>& options = {}) {
    std::vector<std::string> mkfs = {peregrine_bin(), "mkfs", "--force"};
    mkfs.insert(mkfs.end(), devices_.begin(), devices_.end());
    RunResult m = run(mkfs);
    ASSERT_EQ(m.code, 0) << m.describe();
    RunResult r = volume_->mount(options, devices_);
    ASSERT_EQ(r.code, 0) << r.describe();
  }

  std::optional<Volume> volume_;
  std::vector<std::string> backing_, devices_;
};

}  // namespace peregrine::fstest
