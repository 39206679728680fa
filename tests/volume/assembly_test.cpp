// Assembly: members in any order form one volume; every way a set of
// members can be wrong is refused with the member named, and nothing is
// written to any of them.
#include "peregrine/volume/assembly.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class AssemblyTest : public VolumeTest {
 protected:
  void SetUp() override {
    VolumeTest::SetUp();
    if (HasFatalFailure()) return;
    members_ = make_files("m", 3, 16 * kMiB);
    created_ = mkfs(members_);
  }

  // Assembles `paths` read-write expecting a refusal that names `member`,
  // and checks that no file among `paths` changed.
  Status expect_refused(const std::vector<std::string>& paths, const std::string& member) {
    auto before = snapshot(paths);
    auto r = assemble(paths, MemberFile::Mode::read_write);
    EXPECT_FALSE(r);
    if (r) return Status::ok();
    EXPECT_MENTIONS(r.status(), member);
    EXPECT_TRUE(snapshot(paths) == before) << "a refused assembly changed a member";
    return r.status();
  }

  std::string primary_block(const std::string& p) { return read_bytes(p, 0, kSuperblockSize); }

  std::vector<std::string> members_;
  MkfsResult created_;
};

TEST_F(AssemblyTest, EveryOrderOfTheMembersAssemblesTheSameVolume) {
  std::vector<std::string> order = members_;
  std::sort(order.begin(), order.end());
  do {
    auto before = snapshot(order);
    auto vol = assemble(order, MemberFile::Mode::read_write);
    ASSERT_TRUE(vol) << vol.status().message();
    EXPECT_EQ(vol->superblock.volume_uuid, created_.superblock.volume_uuid);
    EXPECT_EQ(vol->geometry, created_.superblock.geometry());
    for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(vol->members[i].info().path, members_[i]);
    EXPECT_TRUE(vol->warnings.empty());
    vol = Status::error(0, "");  // release the members before comparing
    EXPECT_TRUE(snapshot(order) == before) << "assembly wrote to a member";
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(AssemblyTest, RefusesAMissingMemberNamingItsIndexAndUuid) {
  Status s = expect_refused({members_[2], members_[0]},
                            "index 1 (member UUID " + created_.superblock.member_uuids[1].to_string() + ")");
  EXPECT_MENTIONS(s, "1 of 3 members missing");
  EXPECT_EQ(s.errnum(), ENODEV);
}

TEST_F(AssemblyTest, RefusesAMemberOfAnotherVolumeNamingBothVolumes) {
  auto other = make_files("other", 2, 20 * kMiB);
  MkfsResult foreign = mkfs(other);
  Status s = expect_refused({members_[0], other[1], members_[1], members_[2]}, "member " + other[1] + ":");
  EXPECT_MENTIONS(s, "belongs to another volume");
  EXPECT_MENTIONS(s, foreign.superblock.volume_uuid.to_string());
  EXPECT_MENTIONS(s, created_.superblock.volume_uuid.to_string());
}

TEST_F(AssemblyTest, RefusesAForeignMemberStandingInForAMissingOne) {
  auto other = make_files("other", 2, 20 * kMiB);
  mkfs(other);
  Status s = expect_refused({other[0], members_[0], members_[1]}, "member " + other[0] + ":");
  EXPECT_MENTIONS(s, "belongs to another volume");
}

TEST_F(AssemblyTest, RefusesAFileThatIsNoMemberAtAll) {
  std::string plain = make_file("plain", 20 * kMiB);
  Status s = expect_refused({members_[0], members_[1], members_[2], plain}, "member " + plain + ":");
  EXPECT_MENTIONS(s, "not a peregrine member");
}

TEST_F(AssemblyTest, RefusesTheSameFileGivenTwice) {
  Status s = expect_refused({members_[0], members_[1], members_[2], members_[1]}, "member " + members_[1] + ":");
  EXPECT_MENTIONS(s, "given twice");
}

TEST_F(AssemblyTest, RefusesACopyOfAMemberAsDuplicated) {
  std::string copy = path("copy-of-m1");
  std::filesystem::copy_file(members_[1], copy);
  Status s = expect_refused({members_[0], members_[1], copy, members_[2]}, "member " + copy + ":");
  EXPECT_MENTIONS(s, "duplicated member: claims index 1");
  EXPECT_MENTIONS(s, "as does member " + members_[1]);
}

TEST_F(AssemblyTest, RefusesAMemberWhoseBothSuperblocksAreCorrupt) {
  write_bytes(members_[2], 300, "junk");
  write_bytes(members_[2], kBackupSuperblockOffset + 300, "junk");
  Status s = expect_refused(members_, "member " + members_[2] + ":");
  EXPECT_MENTIONS(s, "superblock corrupt and no valid backup");
  EXPECT_MENTIONS(s, "checksum mismatch");
}

TEST_F(AssemblyTest, RefusesInconsistentGeometry) {
  // A validly sealed superblock that disagrees about the stripe unit.
  std::string block = primary_block(members_[1]);
  put_le32(block, 84, 128 * 1024);
  reseal(block);
  write_both_copies(members_[1], block);
  Status s = expect_refused(members_, "member " + members_[1] + ":");
  EXPECT_MENTIONS(s, "geometry differs from member " + members_[0]);
  EXPECT_MENTIONS(s, "stripe_unit 65536 vs 131072");
}

TEST_F(AssemblyTest, RefusesAnUnsupportedFormatVersion) {
  std::string block = primary_block(members_[0]);
  put_le32(block, 8, kFormatVersion + 1);
  reseal(block);
  write_both_copies(members_[0], block);
  Status s = expect_refused(members_, "member " + members_[0] + ":");
  EXPECT_MENTIONS(s, "unsupported format version 2");
}

TEST_F(AssemblyTest, RefusesAnUnsupportedLayoutVersion) {
  std::string block = primary_block(members_[0]);
  put_le32(block, 12, kLayoutVersion + 1);
  reseal(block);
  write_both_copies(members_[0], block);
  Status s = expect_refused(members_, "member " + members_[0] + ":");
  EXPECT_MENTIONS(s, "unsupported layout version 2");
}

TEST_F(AssemblyTest, RefusesAMemberSmallerThanItsRecordedSize) {
  std::filesystem::resize_file(members_[1], 8 * kMiB);
  Status s = expect_refused(members_, "member " + members_[1] + ":");
  EXPECT_MENTIONS(s, "smaller than its recorded size");
}

TEST_F(AssemblyTest, RefusesAMemberInUseByAnotherPeregrineProcess) {
  int fd = ::open(members_[0].c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  Status s = expect_refused(members_, "member " + members_[0] + ":");
  EXPECT_MENTIONS(s, "in use by another peregrine process");
  EXPECT_EQ(s.errnum(), EBUSY);
  ::close(fd);
}

TEST_F(AssemblyTest, ReadersShareMembersButAWriterExcludesThem) {
  auto reader1 = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(reader1) << reader1.status().message();
  auto reader2 = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(reader2) << reader2.status().message();
  auto writer = assemble(members_, MemberFile::Mode::read_write);
  ASSERT_FALSE(writer);
  EXPECT_MENTIONS(writer.status(), "in use by another peregrine process");
}

TEST_F(AssemblyTest, RefusesWritingAVolumeWithUnknownReadOnlyFeatures) {
  for (const auto& m : members_) {
    std::string primary = primary_block(m);
    std::string backup = read_bytes(m, kBackupSuperblockOffset, kSuperblockSize);
    for (std::string* b : {&primary, &backup}) {
      (*b)[24] = 0x01;  // features_ro_compat bit 0, unknown to this build
      reseal(*b);
    }
    write_bytes(m, 0, primary);
    write_bytes(m, kBackupSuperblockOffset, backup);
  }
  Status s = expect_refused(members_, created_.superblock.volume_uuid.to_string());
  EXPECT_MENTIONS(s, "read-only-compatible features 0x1");
  EXPECT_TRUE(assemble(members_, MemberFile::Mode::read_only));
}

}  // namespace
}  // namespace peregrine::test
