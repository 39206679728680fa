// The mount record (docs/format.md, "Mount record"): what a member keeps of
// its volume's last read-write mount. It round-trips, a member fresh from
// mkfs has none, a damaged one is reported rather than trusted, writing it
// leaves the superblocks and the data area alone, and examine_member reads
// it (with both superblocks) without claiming the member. A member open
// beyond the superblock's count (a restripe given up) gets none.
#include <sys/file.h>

#include "peregrine/util/aligned_buffer.h"
#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_examination.h"
#include "peregrine/volume/mount_record.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

MountRecord sample() {
  MountRecord r;
  r.volume_uuid.bytes[0] = 1;
  r.member_uuid.bytes[15] = 2;
  r.state = MountRecord::State::kUnmountedCleanly;
  r.mount_time = 1700000000;
  r.unmount_time = 1700000600;
  r.hostname = "host-a";
  r.mountpoint = "/srv/with space";
  r.member_paths = {"/dev/disk/by-id/nvme-A", "/dev/disk/by-id/nvme-B", std::string(4000, 'p')};
  return r;
}

TEST(MountRecordCodec, RoundTripsEveryField) {
  MountRecord r = sample();
  AlignedBuffer buf(mount_record_size(r));
  EXPECT_EQ(buf.size() % 4096, 0u);
  EXPECT_GT(buf.size(), 4096u) << "a 4000-byte path needs a second block";
  ASSERT_TRUE(encode_mount_record(r, buf.span()));
  auto back = decode_mount_record(buf.span());
  ASSERT_TRUE(back) << back.status().message();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, r);
}

TEST(MountRecordCodec, ZerosAreNoRecordAndDamageIsAnError) {
  AlignedBuffer zeros(4096);
  auto none = decode_mount_record(zeros.span());
  ASSERT_TRUE(none) << none.status().message();
  EXPECT_FALSE(none->has_value());

  MountRecord r = sample();
  AlignedBuffer buf(mount_record_size(r));
  ASSERT_TRUE(encode_mount_record(r, buf.span()));
  buf.data()[200] ^= std::byte{1};
  auto bad = decode_mount_record(buf.span());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("checksum mismatch"), std::string::npos) << bad.status().message();
}

class MountRecordOnMembers : public VolumeTest {};

TEST_F(MountRecordOnMembers, WrittenOnEveryMemberAndReadByExamineWithoutALock) {
  auto members = make_files("m", 3, 20 * kMiB);
  MkfsResult made = mkfs(members);
  for (const std::string& m : members) {
    auto e = examine_member(m, false);
    ASSERT_TRUE(e) << e.status().message();
    EXPECT_FALSE(e->mount_record) << m << ": mkfs leaves no mount record";
    EXPECT_TRUE(e->mount_record_problem.empty()) << e->mount_record_problem;
  }
  auto superblocks_before = snapshot(members);
  {
    auto v = assemble(members, MemberFile::Mode::read_write);
    ASSERT_TRUE(v) << v.status().message();
    auto written = record_mount_on_members(*v, "/mnt/x", 1234);
    ASSERT_TRUE(written) << written.status().message();
    // Examine reads while the volume is held (the daemon's exclusive lock).
    for (size_t i = 0; i < members.size(); ++i) {
      auto e = examine_member(members[i], false);
      ASSERT_TRUE(e) << e.status().message();
      ASSERT_TRUE(e->mount_record) << e->mount_record_problem;
      EXPECT_EQ(e->mount_record->state, MountRecord::State::kMounted);
      EXPECT_EQ(e->mount_record->mountpoint, "/mnt/x");
      EXPECT_EQ(e->mount_record->mount_time, 1234u);
      EXPECT_EQ(e->mount_record->member_paths, members);
      EXPECT_EQ(e->mount_record->member_uuid, made.superblock.member_uuids[i]);
    }
    ASSERT_TRUE(record_clean_unmount_on_members(*v, *written, 5678));
  }
  auto e = examine_member(members[2], false);
  ASSERT_TRUE(e && e->mount_record);
  EXPECT_EQ(e->mount_record->state, MountRecord::State::kUnmountedCleanly);
  EXPECT_EQ(e->mount_record->unmount_time, 5678u);
  EXPECT_EQ(e->mount_record->mount_time, 1234u);
  // Only the record's own bytes changed: superblocks and everything else are as mkfs left them.
  auto after = snapshot(members);
  for (const std::string& m : members) {
    std::string a = superblocks_before[m], b = after[m];
    ASSERT_EQ(a.size(), b.size());
    size_t record_end = kMountRecordOffset + 4096;
    EXPECT_EQ(a.substr(0, kMountRecordOffset), b.substr(0, kMountRecordOffset)) << m;
    EXPECT_EQ(a.substr(record_end), b.substr(record_end)) << m;
  }
  // Assembly (what mounts) is unaffected by the record.
  auto again = assemble(members, MemberFile::Mode::read_only);
  EXPECT_TRUE(again) << again.status().message();
}

TEST_F(MountRecordOnMembers, ExamineSaysWhatANonMemberIs) {
  std::string stray = make_file("stray", 2 * kMiB, 'x');
  auto e = examine_member(stray, true);
  ASSERT_TRUE(e) << e.status().message();
  EXPECT_FALSE(e->is_member());
  EXPECT_FALSE(e->copies.any_magic());
  EXPECT_FALSE(e->foreign_signature) << *e->foreign_signature;
}

// An online restripe that stopped leaves the daemon holding the added
// members over a superblock that still counts the old ones; the unmount's
// record goes to those alone.
TEST_F(MountRecordOnMembers, AMemberTheSuperblockDoesNotCountGetsNoRecord) {
  auto members = make_files("m", 2, 20 * kMiB);
  mkfs(members);
  const std::string added = make_files("added", 1, 20 * kMiB)[0];
  const std::string added_before = read_file(added);
  {
    auto v = assemble(members, MemberFile::Mode::read_write);
    ASSERT_TRUE(v) << v.status().message();
    auto extra = MemberFile::open(added, MemberFile::Mode::read_write);
    ASSERT_TRUE(extra) << extra.status().message();
    v->members.push_back(std::move(*extra));
    auto written = record_mount_on_members(*v, "/mnt/x", 1234);
    ASSERT_TRUE(written) << written.status().message();
    ASSERT_TRUE(record_clean_unmount_on_members(*v, *written, 5678));
  }
  EXPECT_TRUE(read_file(added) == added_before) << "the uncounted member was written";
  auto e = examine_member(members[1], false);
  ASSERT_TRUE(e && e->mount_record);
  EXPECT_EQ(e->mount_record->state, MountRecord::State::kUnmountedCleanly);
}

}  // namespace
}  // namespace peregrine::test
