// fstrim and -o discard on a real mount: FITRIM reaches the daemon through
// the mount point (a FUSE directory ioctl), freed space is discarded on the
// members (holes punched in member files, BLKDISCARD on loop devices, whose
// backing files then shrink), the data of the files that remain is intact
// before and after a remount, and the statistics count what was discarded.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "fs_test_util.h"
#include "loop_volume.h"

namespace peregrine::fstest {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Bytes the files hold on the device under them (st_blocks), summed.
uint64_t allocated_bytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  for (const std::string& f : files) {
    struct stat st {};
    EXPECT_EQ(::stat(f.c_str(), &st), 0) << f;
    total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// The default mount answers a close's writebacks before the members have
// them (write-behind): an fsync of the mount's root waits for every one
// answered so far, so that the member files show what was written.
void writes_landed(const std::string& mnt) {
  Fd root(::open(mnt.c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(root.ok()) << mnt << ": " << std::strerror(errno);
  ASSERT_EQ(::fsync(root.get()), 0) << std::strerror(errno);
}

struct Trim {
  Outcome result;
  fstrim_range range{};
};
Trim fitrim(int fd, uint64_t start, uint64_t len, uint64_t minlen) {
  Trim t;
  t.range = fstrim_range{start, len, minlen};
  errno = 0;
  t.result = outcome(::ioctl(fd, FITRIM, &t.range));
  return t;
}
Trim fitrim(const std::string& dir, uint64_t start = 0, uint64_t len = UINT64_MAX, uint64_t minlen = 0) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_TRUE(fd.ok()) << dir << ": " << std::strerror(errno);
  return fitrim(fd.get(), start, len, minlen);
}

nlohmann::json stats_of(const std::string& mnt) {
  char buf[1 << 16];
  ssize_t n = ::getxattr(mnt.c_str(), "user.peregrine.stats", buf, sizeof buf);
  EXPECT_GT(n, 0) << std::strerror(errno);
  return nlohmann::json::parse(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
}

// What member files give back must be what was deleted, less the few
// blocks of metadata (journal batches) written between the two samples.
constexpr uint64_t kMetadataSlack = kMiB;

class TrimTest : public MountedTest {};

TEST_F(TrimTest, FstrimGivesDeletedSpaceBackToMemberFilesAndKeepsTheRest) {
  const std::string keep = pattern(8 * kMiB + 12345, 1);
  ASSERT_TRUE(write_file(at("keep"), keep));
  ASSERT_TRUE(write_file(at("big"), pattern(96 * kMiB, 2)));
  writes_landed(volume_->mountpoint());
  const uint64_t before = allocated_bytes(volume_->members());
  ASSERT_GE(before, 104 * kMiB);
  ASSERT_EQ(::unlink(at("big").c_str()), 0);

  Trim t = fitrim(volume_->mountpoint());
  ASSERT_EQ(t.result, (Outcome{0, 0}));
  EXPECT_GE(t.range.len, 96 * kMiB) << "fstrim_range.len says how much was discarded";
  const uint64_t after = allocated_bytes(volume_->members());
  EXPECT_GE(before - std::min(before, after) + kMetadataSlack, 96 * kMiB) << "before " << before << ", after " << after;
  EXPECT_EQ(read_file(at("keep")), keep);

  // The statistics count it: per drive, and as fstrim's.
  nlohmann::json s = stats_of(volume_->mountpoint());
  uint64_t drives = 0;
  for (const auto& d : s.at("drives")) drives += d.at("discarded_bytes").get<uint64_t>();
  EXPECT_EQ(drives, t.range.len);
  EXPECT_EQ(s.at("discard").at("fstrim_bytes").get<uint64_t>(), t.range.len);
  EXPECT_EQ(s.at("discard").at("fstrim_runs").get<uint64_t>(), 1u);
  EXPECT_FALSE(s.at("discard").at("online").get<bool>());

  // The trimmed space takes new data, and everything survives a remount.
  const std::string fresh = pattern(32 * kMiB, 3);
  ASSERT_TRUE(write_file(at("fresh"), fresh));
  ASSERT_EQ(volume_->unmount(), 0);
  ASSERT_EQ(volume_->mount().code, 0);
  EXPECT_EQ(read_file(at("keep")), keep);
  EXPECT_EQ(read_file(at("fresh")), fresh);
}

TEST_F(TrimTest, UtilLinuxFstrimWorksOnTheMountPoint) {
  if (::access("/sbin/fstrim", X_OK) != 0 && ::access("/usr/sbin/fstrim", X_OK) != 0)
    GTEST_SKIP() << "no fstrim (util-linux) here";
  ASSERT_TRUE(write_file(at("big"), pattern(40 * kMiB, 4)));
  ASSERT_EQ(::unlink(at("big").c_str()), 0);
  writes_landed(volume_->mountpoint());
  const uint64_t before = allocated_bytes(volume_->members());
  RunResult r = run({"fstrim", "-v", volume_->mountpoint()});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("trimmed"), std::string::npos) << r.out;
  EXPECT_GE(before - std::min(before, allocated_bytes(volume_->members())) + kMetadataSlack, 40 * kMiB);
}

TEST_F(TrimTest, FitrimHonoursRangeAndMinimumAndRefusesWhatExt4Refuses) {
  ASSERT_TRUE(write_file(at("a"), pattern(4 * kMiB, 5)));
  Fd root(::open(volume_->mountpoint().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(root.ok());
  struct statvfs sv {};
  ASSERT_EQ(::fstatvfs(root.get(), &sv), 0);
  const uint64_t size = sv.f_blocks * sv.f_frsize;

  Trim part = fitrim(root.get(), 0, kMiB, 0);
  ASSERT_EQ(part.result, (Outcome{0, 0}));
  EXPECT_LE(part.range.len, kMiB);
  Trim huge_minimum = fitrim(root.get(), 0, UINT64_MAX, size);
  ASSERT_EQ(huge_minimum.result, (Outcome{0, 0}));
  EXPECT_EQ(huge_minimum.range.len, 0u) << "no free extent is as large as the volume";

  EXPECT_EQ(fitrim(root.get(), size, kMiB, 0).result, (Outcome{-1, EINVAL})) << "starts past the end";
  EXPECT_EQ(fitrim(root.get(), 0, 100, 0).result, (Outcome{-1, EINVAL})) << "shorter than a block";
  EXPECT_EQ(fitrim(root.get(), 0, UINT64_MAX, size + 4096).result, (Outcome{-1, EINVAL}));
  // A regular file answers too (ext4's FITRIM works on any file of it).
  Fd file(::open(at("a").c_str(), O_RDONLY));
  EXPECT_EQ(fitrim(file.get(), 0, UINT64_MAX, 0).result, (Outcome{0, 0}));
  EXPECT_EQ(read_file(at("a")), pattern(4 * kMiB, 5));
}

// CAP_SYS_ADMIN, as on every local filesystem: others get EPERM. (Without
// allow_other the kernel refuses them first, with EACCES.)
class AllowOtherTrimTest : public MountedTest {
  std::vector<std::string> mount_options() override { return {"-o", "fuse.allow_other=true"}; }
};

TEST_F(AllowOtherTrimTest, OnlyRootMayTrim) {
  Fd root(::open(volume_->mountpoint().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(root.ok());
  const int fd = root.get();
  EXPECT_EQ(as_nobody([fd] { return fitrim(fd, 0, UINT64_MAX, 0).result; }), (Outcome{-1, EPERM}));
  EXPECT_EQ(fitrim(fd, 0, UINT64_MAX, 0).result, (Outcome{0, 0}));
}

class ReadOnlyTrimTest : public FreshVolumeTest {};

TEST_F(ReadOnlyTrimTest, IsRefusedWithErofs) {
  ASSERT_EQ(volume_->mount({"-o", "ro"}).code, 0);
  EXPECT_EQ(fitrim(volume_->mountpoint()).result, (Outcome{-1, EROFS}));
  EXPECT_EQ(volume_->unmount(), 0);
}

class OnlineDiscardTest : public MountedTest {
  std::vector<std::string> mount_options() override { return {"-o", "discard"}; }
};

// Deleting returns at once; the discard follows in the background, and the
// unmount discards whatever is still waiting, so after it the member files
// have given the deleted file's space back.
TEST_F(OnlineDiscardTest, FreedSpaceIsDiscardedWithoutFstrim) {
  const std::string keep = pattern(8 * kMiB + 1, 6);
  ASSERT_TRUE(write_file(at("keep"), keep));
  ASSERT_TRUE(write_file(at("big"), pattern(96 * kMiB, 7)));
  writes_landed(volume_->mountpoint());
  const uint64_t before = allocated_bytes(volume_->members());
  EXPECT_TRUE(stats_of(volume_->mountpoint()).at("discard").at("online").get<bool>());
  ASSERT_EQ(::unlink(at("big").c_str()), 0);
  ASSERT_EQ(volume_->unmount(), 0);
  const uint64_t after = allocated_bytes(volume_->members());
  EXPECT_GE(before - std::min(before, after) + kMetadataSlack, 96 * kMiB) << "before " << before << ", after " << after;
  ASSERT_EQ(volume_->mount({"-o", "discard"}).code, 0);
  EXPECT_EQ(read_file(at("keep")), keep);
  // Deleting a tree and writing at once: the new data is never hit by a
  // discard of the space it reuses.
  ASSERT_EQ(::mkdir(at("tree").c_str(), 0755), 0);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(write_file(at("tree/f" + std::to_string(i)), pattern(kMiB, 100 + i)));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(::unlink(at("tree/f" + std::to_string(i)).c_str()), 0);
  std::vector<std::string> again;
  for (int i = 0; i < 64; ++i) {
    again.push_back(pattern(kMiB, 200 + i));
    ASSERT_TRUE(write_file(at("again" + std::to_string(i)), again.back()));
  }
  ASSERT_EQ(volume_->unmount(), 0);
  ASSERT_EQ(volume_->mount().code, 0);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(read_file(at("again" + std::to_string(i))), again[i]) << i;
  EXPECT_EQ(read_file(at("keep")), keep);
}

// The same on block devices: loop devices over sparse files, whose
// BLKDISCARD punches holes in the backing files.
using LoopDeviceTrimTest = LoopDeviceVolumeTest;

TEST_F(LoopDeviceTrimTest, FstrimDiscardsOnBlockDevices) {
  make_and_mount();
  const std::string keep = pattern(4 * kMiB + 7, 8);
  ASSERT_TRUE(write_file(volume_->at("keep"), keep));
  ASSERT_TRUE(write_file(volume_->at("big"), pattern(96 * kMiB, 9)));
  writes_landed(volume_->mountpoint());
  const uint64_t before = allocated_bytes(backing_);
  ASSERT_EQ(::unlink(volume_->at("big").c_str()), 0);
  Trim t = fitrim(volume_->mountpoint());
  ASSERT_EQ(t.result, (Outcome{0, 0}));
  EXPECT_GE(t.range.len, 96 * kMiB);
  const uint64_t after = allocated_bytes(backing_);
  EXPECT_GE(before - std::min(before, after) + kMetadataSlack, 96 * kMiB) << "before " << before << ", after " << after;
  EXPECT_EQ(read_file(volume_->at("keep")), keep);
  ASSERT_EQ(volume_->unmount(), 0);
  ASSERT_EQ(volume_->mount({}, devices_).code, 0);
  EXPECT_EQ(read_file(volume_->at("keep")), keep);
}

}  // namespace
}  // namespace peregrine::fstest
