// Backup superblock: mkfs writes a second copy; assembly falls back to it
// when the primary is torn or corrupt, and says so; it lists every copy it
// did not use, and write_durable_superblock_copy (fsck's repair) makes that copy
// the used one again, byte for byte.
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

// Each kind of damage is listed once, with the member index and the offset
// of the copy to restore; restoring it from the copy in use leaves both
// copies identical and assembly silent.
TEST_F(BackupSuperblockTest, DamagedCopiesAreListedAndRestoredFromTheCopyInUse) {
  write_bytes(members_[0], 0, std::string(64 * 1024, '\x5a'));   // primary of m0: garbage
  write_bytes(members_[1], kBackupSuperblockOffset + 77, "xx");  // backup of m1: corrupt
  {
    auto vol = assemble(members_, MemberFile::Mode::read_only);
    ASSERT_TRUE(vol) << vol.status().message();
    ASSERT_EQ(vol->damaged_copies.size(), 2u);
    EXPECT_EQ(vol->damaged_copies[0].member_index, 0u);
    EXPECT_EQ(vol->damaged_copies[0].offset, kPrimarySuperblockOffset);
    EXPECT_NE(vol->damaged_copies[0].problem.find("member " + members_[0] + ": primary superblock corrupt"),
              std::string::npos)
        << vol->damaged_copies[0].problem;
    EXPECT_EQ(vol->damaged_copies[1].member_index, 1u);
    EXPECT_EQ(vol->damaged_copies[1].offset, kBackupSuperblockOffset);
    EXPECT_EQ(vol->warnings.size(), 2u);
    ASSERT_EQ(vol->member_superblocks.size(), 2u);
    EXPECT_EQ(vol->member_superblocks[0].member_index, 0u);
    EXPECT_EQ(vol->member_superblocks[1].member_index, 1u);
  }
  {
    auto vol = assemble(members_, MemberFile::Mode::read_write);
    ASSERT_TRUE(vol) << vol.status().message();
    for (const DamagedSuperblockCopy& d : vol->damaged_copies) {
      Status s = write_durable_superblock_copy(vol->members[d.member_index], vol->member_superblocks[d.member_index],
                                               d.offset);
      EXPECT_TRUE(s) << s.message();
    }
  }
  for (const auto& m : members_)
    EXPECT_EQ(read_bytes(m, 0, kSuperblockSize), read_bytes(m, kBackupSuperblockOffset, kSuperblockSize)) << m;
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_TRUE(vol->damaged_copies.empty());
  EXPECT_TRUE(vol->warnings.empty());
  EXPECT_EQ(vol->superblock.volume_uuid, created_.superblock.volume_uuid);
}

TEST_F(BackupSuperblockTest, StaleBackupIsListedForRestoreFromThePrimary) {
  std::string block = read_bytes(members_[1], 0, kSuperblockSize);
  block[128] = 2;  // the primary was rewritten (generation 2), the backup not yet
  reseal(block);
  write_bytes(members_[1], 0, block);
  auto vol = assemble(members_, MemberFile::Mode::read_write);
  ASSERT_TRUE(vol) << vol.status().message();
  ASSERT_EQ(vol->damaged_copies.size(), 1u);
  EXPECT_EQ(vol->damaged_copies[0].offset, kBackupSuperblockOffset);
  EXPECT_EQ(vol->member_superblocks[1].generation, 2u);
  Status s = write_durable_superblock_copy(vol->members[1], vol->member_superblocks[1], kBackupSuperblockOffset);
  EXPECT_TRUE(s) << s.message();
  EXPECT_EQ(read_bytes(members_[1], kBackupSuperblockOffset, kSuperblockSize), block);
}

}  // namespace
}  // namespace peregrine::test
