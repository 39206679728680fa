// Growing a volume (grow_volume) and assembling one whose superblocks
// disagree only in member_data_size (a grow that stopped half-way): the
// smallest recorded size is used and a warning names the members; grow
// computes the new size as mkfs would, zeroes the new end without
// touching the data area in use, and finishes after a stop at every step.
#include "peregrine/volume/grow.h"

#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_superblocks.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kUnit = 64 * 1024;

// Thrown by after_step: stops grow_volume as a crash would, after the
// copy of that step is on disk.
struct Stop {};

class GrowTest : public VolumeTest {
 protected:
  void SetUp() override {
    VolumeTest::SetUp();
    if (HasFatalFailure()) return;
    members_ = make_files("m", 3, 24 * kMiB);
    created_ = mkfs(members_);
    old_size_ = created_.superblock.member_data_size;
    ASSERT_EQ(old_size_, 23 * kMiB);
  }

  // Both copies of member `i`'s superblock (decoded; the test fails if not).
  std::pair<Superblock, Superblock> copies(size_t i) {
    auto f = MemberFile::open(members_[i], MemberFile::Mode::read_only);
    EXPECT_TRUE(f) << f.status().message();
    if (!f) return {};
    auto sbs = read_member_superblocks(*f);
    EXPECT_TRUE(sbs && sbs->primary.superblock && sbs->backup.superblock);
    if (!sbs || !sbs->primary.superblock || !sbs->backup.superblock) return {};
    return {*sbs->primary.superblock, *sbs->backup.superblock};
  }

  // Rewrites one copy of member `i` with member_data_size = `size`, as an
  // interrupted grow leaves it.
  void set_recorded_size(size_t i, uint64_t offset, uint64_t size) {
    auto [p, b] = copies(i);
    Superblock sb = offset == kPrimarySuperblockOffset ? p : b;
    sb.member_data_size = size;
    sb.generation += 1;
    auto f = MemberFile::open(members_[i], MemberFile::Mode::read_write);
    ASSERT_TRUE(f) << f.status().message();
    ASSERT_TRUE(write_superblock_copy(*f, sb, offset));
  }

  void extend_all(uint64_t size) {
    for (const auto& m : members_) std::filesystem::resize_file(m, size);
  }

  // The part of each member that holds the volume's data now.
  std::vector<std::string> data_in_use() {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(read_bytes(m, kDefaultDataStart, old_size_));
    return out;
  }

  // Fills every member's data area in use with a recognisable pattern.
  void fill_data_area() {
    for (size_t i = 0; i < members_.size(); ++i) {
      std::string bytes(old_size_, '\0');
      for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = static_cast<char>('A' + (j * 7 + i) % 26);
      write_bytes(members_[i], kDefaultDataStart, bytes);
    }
  }

  Expected<GrowResult> grow(std::function<void(int)> after_step = {}, std::optional<uint64_t> size = {}) {
    GrowOptions o;
    o.members = members_;
    o.after_step = std::move(after_step);
    o.size = size;
    return grow_volume(o);
  }

  std::vector<std::string> members_;
  MkfsResult created_;
  uint64_t old_size_ = 0;
};

TEST_F(GrowTest, AssemblyUsesTheSmallestRecordedSizeAndNamesTheMembers) {
  extend_all(40 * kMiB);
  set_recorded_size(0, kPrimarySuperblockOffset, 39 * kMiB);
  set_recorded_size(0, kBackupSuperblockOffset, 39 * kMiB);
  auto before = snapshot(members_);
  auto vol = assemble(members_, MemberFile::Mode::read_write);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_EQ(vol->superblock.member_data_size, old_size_);
  EXPECT_EQ(vol->geometry.member_data_size, old_size_);
  EXPECT_TRUE(vol->damaged_copies.empty());
  ASSERT_EQ(vol->warnings.size(), 1u);
  EXPECT_EQ(vol->warnings[0], vol->interrupted_grow);
  EXPECT_NE(vol->interrupted_grow.find(members_[0] + " 39 MiB"), std::string::npos) << vol->interrupted_grow;
  EXPECT_NE(vol->interrupted_grow.find(members_[1] + " 23 MiB"), std::string::npos) << vol->interrupted_grow;
  EXPECT_NE(vol->interrupted_grow.find("uses the smallest, 23 MiB"), std::string::npos) << vol->interrupted_grow;
  EXPECT_NE(vol->interrupted_grow.find("'peregrine grow' is run again"), std::string::npos);
  vol = Status::error(0, "");
  EXPECT_TRUE(snapshot(members_) == before) << "assembly wrote to a member";
}

TEST_F(GrowTest, ABackupBehindItsPrimaryKeepsTheOldSizeAndIsNotDamage) {
  // Every primary says the new size; one backup does not yet.
  extend_all(40 * kMiB);
  for (size_t i = 0; i < members_.size(); ++i) {
    set_recorded_size(i, kPrimarySuperblockOffset, 39 * kMiB);
    if (i != 2) set_recorded_size(i, kBackupSuperblockOffset, 39 * kMiB);
  }
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_EQ(vol->geometry.member_data_size, old_size_);
  EXPECT_TRUE(vol->damaged_copies.empty());
  EXPECT_NE(vol->interrupted_grow.find(members_[2] + " 39 MiB (backup 23 MiB)"), std::string::npos)
      << vol->interrupted_grow;
}

TEST_F(GrowTest, OtherDifferencesBesideTheSizeAreStillRefused) {
  extend_all(40 * kMiB);
  auto [p, b] = copies(1);
  p.member_data_size = 39 * kMiB;
  p.stripe_unit = 128 * 1024;
  auto f = MemberFile::open(members_[1], MemberFile::Mode::read_write);
  ASSERT_TRUE(f);
  ASSERT_TRUE(write_superblock_copy(*f, p, kPrimarySuperblockOffset));
  ASSERT_TRUE(write_superblock_copy(*f, p, kBackupSuperblockOffset));
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_FALSE(vol);
  EXPECT_MENTIONS(vol.status(), "geometry differs");
  EXPECT_MENTIONS(vol.status(), "stripe_unit");
}

TEST_F(GrowTest, GrowsToWhatTheSmallestMemberHoldsAndKeepsTheData) {
  fill_data_area();
  const auto data = data_in_use();
  std::filesystem::resize_file(members_[0], 48 * kMiB);
  std::filesystem::resize_file(members_[1], 40 * kMiB + 100 * 1024);  // the smallest, not a whole unit
  std::filesystem::resize_file(members_[2], 64 * kMiB);
  auto r = grow();
  ASSERT_TRUE(r) << r.status().message();
  const uint64_t expect = (40 * kMiB + 100 * 1024 - kDefaultDataStart) / kUnit * kUnit;
  EXPECT_EQ(r->before.member_data_size, old_size_);
  EXPECT_EQ(r->after.member_data_size, expect);
  EXPECT_FALSE(r->finished_interrupted);
  EXPECT_EQ(data_in_use(), data) << "grow changed the data area in use";
  for (size_t i = 0; i < members_.size(); ++i) {
    auto [p, b] = copies(i);
    EXPECT_EQ(p.member_data_size, expect) << members_[i];
    EXPECT_EQ(p, b) << members_[i] << ": backup differs from the primary";
    EXPECT_EQ(p.generation, 2u);
    Superblock was = created_.superblock;
    was.member_index = p.member_index;
    was.member_uuid = p.member_uuid;
    was.member_data_size = expect;
    was.generation = 2;
    EXPECT_EQ(p, was) << "a field other than the size and generation changed";
  }
  auto vol = assemble(members_, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_EQ(vol->geometry.member_data_size, expect);
  EXPECT_TRUE(vol->warnings.empty());
}

TEST_F(GrowTest, ZeroesTheNewEndButNeverTheDataInUse) {
  fill_data_area();
  const auto data = data_in_use();
  // Grown by less than the 1 MiB tail, and by more on another member.
  for (size_t i = 0; i < members_.size(); ++i)
    std::filesystem::resize_file(members_[i], i == 2 ? 32 * kMiB : 24 * kMiB + 256 * 1024);
  write_bytes(members_[2], 31 * kMiB + 512, "a stale signature");
  write_bytes(members_[0], 24 * kMiB + 1000, "bytes past the old end");
  auto r = grow();
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->after.member_data_size, old_size_ + 256 * 1024);
  EXPECT_EQ(data_in_use(), data);
  EXPECT_EQ(read_bytes(members_[2], 31 * kMiB, kMiB), std::string(kMiB, '\0'));
  EXPECT_EQ(read_bytes(members_[0], 24 * kMiB, 256 * 1024), std::string(256 * 1024, '\0'));
}

TEST_F(GrowTest, NothingToGrowIsRefusedAndWritesNothing) {
  std::filesystem::resize_file(members_[1], 24 * kMiB + 32 * 1024);  // less than a stripe unit more
  auto before = snapshot(members_);
  auto r = grow();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().errnum(), ENOSPC);
  EXPECT_MENTIONS(r.status(), "nothing to grow");
  EXPECT_MENTIONS(r.status(), "23 MiB per member");
  EXPECT_MENTIONS(r.status(), members_[0]);
  EXPECT_TRUE(snapshot(members_) == before);
}

TEST_F(GrowTest, SizeExtendsFileMembersFirst) {
  std::filesystem::resize_file(members_[1], 40 * kMiB);
  auto r = grow({}, 33 * kMiB);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->after.member_data_size, 32 * kMiB);
  EXPECT_EQ(std::filesystem::file_size(members_[0]), 33 * kMiB);
  EXPECT_EQ(std::filesystem::file_size(members_[1]), 40 * kMiB) << "--size shrank a member";
  EXPECT_EQ(std::filesystem::file_size(members_[2]), 33 * kMiB);
}

TEST_F(GrowTest, ADamagedCopyIsRefusedUntilFsck) {
  extend_all(40 * kMiB);
  write_bytes(members_[1], kBackupSuperblockOffset + 99, "xx");
  auto before = snapshot(members_);
  auto r = grow();
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), members_[1]);
  EXPECT_MENTIONS(r.status(), "peregrine fsck");
  EXPECT_TRUE(snapshot(members_) == before);
}

// A stop after every superblock copy: the volume assembles at the old
// size (with the warning) until the last copy is written, the data in use
// is untouched, and a second grow finishes.
TEST_F(GrowTest, AStopAfterEveryStepKeepsTheOldSizeUntilRunAgain) {
  fill_data_area();
  const auto data = data_in_use();
  const int steps = 2 * static_cast<int>(members_.size());
  for (int k = 1; k <= steps; ++k) {
    SCOPED_TRACE("stopped after step " + std::to_string(k));
    // Back to the volume as made, then grown member files.
    for (size_t i = 0; i < members_.size(); ++i) {
      auto [p, b] = copies(i);
      p.member_data_size = b.member_data_size = old_size_;
      auto f = MemberFile::open(members_[i], MemberFile::Mode::read_write);
      ASSERT_TRUE(f);
      ASSERT_TRUE(write_superblock_copy(*f, p, kPrimarySuperblockOffset));
      ASSERT_TRUE(write_superblock_copy(*f, p, kBackupSuperblockOffset));
    }
    extend_all(40 * kMiB);
    int last = 0;
    try {
      auto r = grow([&](int step) {
        last = step;
        if (step == k) throw Stop{};
      });
      ASSERT_TRUE(r) << r.status().message();
    } catch (const Stop&) {
    }
    ASSERT_EQ(last, k);
    {
      auto vol = assemble(members_, MemberFile::Mode::read_only);
      ASSERT_TRUE(vol) << vol.status().message();
      EXPECT_TRUE(vol->damaged_copies.empty());
      if (k < steps) {
        EXPECT_EQ(vol->geometry.member_data_size, old_size_);
        EXPECT_FALSE(vol->interrupted_grow.empty());
      } else {
        EXPECT_EQ(vol->geometry.member_data_size, 39 * kMiB);
        EXPECT_TRUE(vol->warnings.empty());
      }
    }
    EXPECT_EQ(data_in_use(), data);
    if (k == steps) continue;
    auto r = grow();
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_TRUE(r->finished_interrupted);
    EXPECT_EQ(r->before.member_data_size, old_size_);
    EXPECT_EQ(r->after.member_data_size, 39 * kMiB);
    auto vol = assemble(members_, MemberFile::Mode::read_only);
    ASSERT_TRUE(vol) << vol.status().message();
    EXPECT_EQ(vol->geometry.member_data_size, 39 * kMiB);
    EXPECT_TRUE(vol->warnings.empty());
    EXPECT_EQ(data_in_use(), data);
  }
}

}  // namespace
}  // namespace peregrine::test
