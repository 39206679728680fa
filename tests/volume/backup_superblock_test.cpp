// Backup superblock: mkfs writes a second copy; assembly falls back to it
// when the primary is torn or corrupt, and says so.
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_superblocks.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class BackupSuperblockTest : public VolumeTest {
 protected:
  void SetUp() override {
    VolumeTest::SetUp();
    if (HasFatalFailure()) return;
    members_ = make_files("m", 2, 20 * kMiB);
    created_ = mkfs(members_);
  }

  bool any_warning_mentions(const AssembledVolume& v, const std::string& a, const std::string& b) {
    for (const auto& w : v.warnings)
      if (w.find(a) != std::string::npos && w.find(b) != std::string::npos) return true;
    return false;
  }

  std::vector<std::string> members_;
  MkfsResult created_;
};

TEST_F(BackupSuperblockTest, MkfsWritesABackupIdenticalToThePrimary) {
  for (const auto& m : members_) {
    auto f = MemberFile::open(m, MemberFile::Mode::read_only);
    ASSERT_TRUE(f) << f.status().message();
    auto sbs = read_member_superblocks(*f);
    ASSERT_TRUE(sbs) << sbs.status().message();
    ASSERT_TRUE(sbs->primary.superblock) << sbs->primary.problem;
    ASSERT_TRUE(sbs->backup.superblock) << sbs->backup.problem;
    EXPECT_EQ(*sbs->primary.superblock, *sbs->backup.superblock);
    EXPECT_EQ(read_bytes(m, 0, kSuperblockSize), read_bytes(m, kBackupSuperblockOffset, kSuperblockSize));
  }
}

TEST_F(BackupSuperblockTest, TornPrimaryFallsBackToTheBackupAndSaysSo) {
  // A write torn after its first 2 KiB: the new half is zeros.
  write_bytes(members_[1], 2048, std::string(2048, '\0'));
  auto before = snapshot(members_);
  auto vol = assemble(members_, MemberFile::Mode::read_write);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_EQ(vol->geometry, created_.superblock.geometry());
  EXPECT_EQ(vol->superblock.volume_uuid, created_.superblock.volume_uuid);
  ASSERT_EQ(vol->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_mentions(*vol, "member " + members_[1] + ":", "primary superblock corrupt"));
  EXPECT_TRUE(any_warning_mentions(*vol, "checksum mismatch", "using backup"));
  vol = Status::error(0, "");
  EXPECT_TRUE(snapshot(members_) == before) << "assembly repaired (wrote) the primary";
}

TEST_F(BackupSuperblockTest, WipedPrimaryFallsBackToTheBackup) {
  write_bytes(members_[0], 0, std::string(kSuperblockSize, '\0'));
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_TRUE(any_warning_mentions(*vol, "member " + members_[0] + ":", "magic missing"));
  EXPECT_EQ(vol->superblock.member_uuids, created_.superblock.member_uuids);
}

TEST_F(BackupSuperblockTest, CorruptBackupIsReportedWhileThePrimaryServes) {
  write_bytes(members_[0], kBackupSuperblockOffset + 77, "xx");
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  ASSERT_EQ(vol->warnings.size(), 1u);
  EXPECT_TRUE(any_warning_mentions(*vol, "member " + members_[0] + ":", "backup superblock corrupt"));
}

TEST_F(BackupSuperblockTest, StaleBackupIsReportedAndThePrimaryWins) {
  // As if a superblock rewrite synced the primary and crashed before the backup.
  std::string block = read_bytes(members_[1], 0, kSuperblockSize);
  block[128] = 2;  // generation 2
  reseal(block);
  write_bytes(members_[1], 0, block);
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_TRUE(any_warning_mentions(*vol, "member " + members_[1] + ":", "backup superblock (generation 1)"));
}

}  // namespace
}  // namespace peregrine::test
