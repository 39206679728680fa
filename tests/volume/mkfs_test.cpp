// mkfs: the volume it creates, and every refusal (the message names the
// member; no member is changed when any member is refused).
#include "peregrine/volume/mkfs.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>

#include "peregrine/volume/assembly.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

MkfsOptions on(std::vector<std::string> members) {
  MkfsOptions o;
  o.members = std::move(members);
  return o;
}

class MkfsTest : public VolumeTest {
 protected:
  // Runs mkfs expecting a refusal; checks the message names `member` and
  // that no file among `all` changed.
  Status expect_refused(const MkfsOptions& o, const std::string& member, const std::vector<std::string>& all) {
    auto before = snapshot(all);
    auto r = make_volume(o);
    EXPECT_FALSE(r);
    if (r) return Status::ok();
    EXPECT_MENTIONS(r.status(), "member " + member + ":");
    EXPECT_TRUE(snapshot(all) == before) << "a refused mkfs changed a member";
    return r.status();
  }
};

TEST_F(MkfsTest, CreatesAVolumeThatAssemblesWithTheSameGeometry) {
  auto m = make_files("m", 3, 16 * kMiB);
  MkfsOptions o;
  o.members = m;
  o.stripe_unit = 64 * 1024;
  o.label = "scratch";
  auto r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  const Superblock& sb = r->superblock;
  EXPECT_EQ(sb.member_count(), 3u);
  EXPECT_EQ(sb.stripe_unit, 64u * 1024);
  EXPECT_EQ(sb.data_start, kDefaultDataStart);
  EXPECT_EQ(sb.member_data_size, 15 * kMiB);
  EXPECT_EQ(sb.meta_offset, 0u);
  EXPECT_EQ(sb.meta_size, meta_size_for_files(45 * kMiB / kDefaultBytesPerInode, 3 * 64 * 1024));
  EXPECT_EQ(sb.label, "scratch");
  EXPECT_EQ(r->members, m);

  auto vol = assemble({m[2], m[0], m[1]}, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_TRUE(vol->warnings.empty());
  EXPECT_EQ(vol->geometry, sb.geometry());
  EXPECT_EQ(vol->superblock, sb);  // member 0's copy, as mkfs reports it
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(vol->members[i].info().path, m[i]);
}

TEST_F(MkfsTest, EachMemberCarriesItsOwnIndexAndUuid) {
  auto m = make_files("m", 2, 20 * kMiB);
  MkfsResult r = mkfs(m);
  for (uint32_t i = 0; i < 2; ++i) {
    std::string block = read_bytes(m[i], kPrimarySuperblockOffset, kSuperblockSize);
    auto sb = decode_superblock(std::as_bytes(std::span(block.data(), block.size())));
    ASSERT_TRUE(sb) << sb.status().message();
    EXPECT_EQ(sb->member_index, i);
    EXPECT_EQ(sb->member_uuid, r.superblock.member_uuids[i]);
    EXPECT_EQ(sb->volume_uuid, r.superblock.volume_uuid);
  }
  EXPECT_NE(r.superblock.member_uuids[0], r.superblock.member_uuids[1]);
}

TEST_F(MkfsTest, MetadataAreaReadsAllZeroThroughTheGeometry) {
  auto m = make_files("m", 3, 16 * kMiB, '\xab');  // old junk everywhere
  MkfsResult r = mkfs(m);
  VolumeGeometry g = r.superblock.geometry();
  std::vector<std::string> images;
  for (const auto& p : m) images.push_back(read_file(p));
  for (uint64_t off = 0; off < r.superblock.meta_size; off += 4096) {
    StripeLocation at = g.locate(off);
    ASSERT_EQ(images[at.member].compare(at.offset, 4096, std::string(4096, '\0')), 0) << "logical offset " << off;
  }
  // The first data stripe after the metadata area is not mkfs's business.
  StripeLocation after = g.locate(r.superblock.meta_size);
  EXPECT_EQ(images[after.member][after.offset], '\xab');
}

// A file member's share of the journal is allocated (written), so that a
// commit's flush does not also commit the host filesystem's journal; the
// checkpoint slots stay holes until used. On tmpfs (no journal to commit)
// the journal's share stays a hole too.
TEST_F(MkfsTest, FileMembersHoldTheJournalWrittenAndTheCheckpointSlotsAsHoles) {
  auto m = make_files("m", 3, 64 * kMiB);
  MkfsResult r = mkfs(m);
  VolumeGeometry g = r.superblock.geometry();
  const uint64_t journal = journal_capacity(r.superblock.meta_size);
  struct statfs fs {};
  ASSERT_EQ(::statfs(m[0].c_str(), &fs), 0);
  const bool on_tmpfs = fs.f_type == TMPFS_MAGIC;
  struct Fds {
    std::vector<int> fd;
    ~Fds() {
      for (int f : fd) ::close(f);
    }
  } fds;
  for (const auto& p : m) {
    fds.fd.push_back(::open(p.c_str(), O_RDONLY));
    ASSERT_GE(fds.fd.back(), 0) << p;
  }
  auto is_hole = [&](uint64_t volume_offset) {
    StripeLocation at = g.locate(volume_offset);
    const off_t off = static_cast<off_t>(at.offset);
    return ::lseek(fds.fd[at.member], off, SEEK_HOLE) == off;
  };
  for (uint64_t off = 0; off < journal; off += 4096)
    ASSERT_EQ(is_hole(off), on_tmpfs) << "journal offset " << off << (on_tmpfs ? " (tmpfs)" : "");
  EXPECT_TRUE(is_hole(journal + 2 * r.superblock.stripe_unit * 3));
  EXPECT_TRUE(is_hole(r.superblock.meta_size - 4096));
}

TEST_F(MkfsTest, SizeCreatesMissingFilesAndExtendsSmallOnes) {
  std::string small = make_file("small", 2 * kMiB, 0);
  MkfsOptions o;
  o.members = {path("new0"), small};
  o.size = 24 * kMiB;
  auto r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(std::filesystem::file_size(path("new0")), 24 * kMiB);
  EXPECT_EQ(std::filesystem::file_size(small), 24 * kMiB);
  EXPECT_EQ(r->superblock.member_data_size, 23 * kMiB);
  EXPECT_TRUE(assemble(o.members, MemberFile::Mode::read_only));
}

// `peregrine mkfs --size 64M a b` run in the members' directory: a bare
// name has no directory part, and it means the current directory.
TEST_F(MkfsTest, SizeCreatesMembersGivenAsBareNamesInTheCurrentDirectory) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  MkfsOptions o = on({"a", "b"});
  o.size = 24 * kMiB;
  auto r = make_volume(o);
  std::filesystem::current_path(before);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(std::filesystem::file_size(path("a")), 24 * kMiB);
  EXPECT_EQ(std::filesystem::file_size(path("b")), 24 * kMiB);
  auto vol = assemble({path("b"), path("a")}, MemberFile::Mode::read_only);
  EXPECT_TRUE(vol) << vol.status().message();
}

TEST_F(MkfsTest, MetaSizeIsRoundedUpToWholeStripeRows) {
  auto m = make_files("m", 3, 64 * kMiB);
  MkfsOptions o;
  o.members = m;
  o.stripe_unit = 128 * 1024;
  o.meta_size = 20 * kMiB;
  auto r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  uint64_t row = 3 * 128 * 1024;
  EXPECT_EQ(r->superblock.meta_size % row, 0u);
  EXPECT_GE(r->superblock.meta_size, 20 * kMiB);
  EXPECT_LT(r->superblock.meta_size, 20 * kMiB + row);
}

TEST_F(MkfsTest, MetaSizeIsTheSmallestThatHoldsTheFiles) {
  EXPECT_EQ(meta_size_for_files(0, 65536), kMinMetaSize);
  EXPECT_EQ(meta_size_for_files(1000, 65536), kMinMetaSize);
  EXPECT_EQ(meta_size_for_files(1000, 3 * 65536) % (3 * 65536), 0u);
  for (uint64_t row : {uint64_t{65536}, uint64_t{3 * 65536}, uint64_t{4 * 128 * 1024}}) {
    for (uint64_t files : {uint64_t{100'000}, uint64_t{1'000'000}, uint64_t{3'000'000}, uint64_t{100'000'000}}) {
      const uint64_t m = meta_size_for_files(files, row);
      EXPECT_EQ(m % row, 0u) << files;
      EXPECT_GE(checkpoint_capacity(m), files * kMetaBytesPerFile) << files << " files, row " << row;
      EXPECT_LT(checkpoint_capacity(m - row), files * kMetaBytesPerFile)
          << files << " files, row " << row << ": a smaller area would do";
    }
  }
  // The documented split: a 16 MiB area has a 4 MiB journal and two 6 MiB
  // slots, each less its 4 KiB header.
  EXPECT_EQ(journal_capacity(16 * kMiB), 4 * kMiB);
  EXPECT_EQ(checkpoint_capacity(16 * kMiB), 6 * kMiB - 4096);
  // Past 1 GiB the journal stays at 256 MiB and the slots take the rest.
  EXPECT_EQ(journal_capacity(2304 * kMiB), 256 * kMiB);
  EXPECT_EQ(checkpoint_capacity(2304 * kMiB), 1024 * kMiB - 4096);
}

TEST_F(MkfsTest, BytesPerInodeAndInodesSizeTheMetadataArea) {
  auto m = make_files("m", 2, 128 * kMiB);  // 254 MiB of volume
  MkfsOptions o;
  o.members = m;
  o.bytes_per_inode = 2048;  // 130048 files
  auto r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  const uint64_t row = 2 * kDefaultStripeUnit;
  EXPECT_EQ(r->superblock.meta_size, meta_size_for_files(254 * kMiB / 2048, row));
  EXPECT_GT(r->superblock.meta_size, kMinMetaSize);
  EXPECT_GE(r->files_planned, 254 * kMiB / 2048);

  o = MkfsOptions{};
  o.members = m;
  o.force = true;
  o.inodes = 150'000;
  r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->superblock.meta_size, meta_size_for_files(150'000, row));
  EXPECT_GE(r->files_planned, 150'000u);

  o.inodes = 2'000'000;  // 512 MB of checkpoint: more than the volume
  r = make_volume(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("2000000 files need a"), std::string::npos) << r.status().message();

  o.bytes_per_inode = 4096;
  r = make_volume(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("at most one of --meta-size, --inodes and --bytes-per-inode"), std::string::npos)
      << r.status().message();
  o.inodes.reset();
  o.bytes_per_inode = 512;
  r = make_volume(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("below the minimum of 1024"), std::string::npos) << r.status().message();
}

TEST_F(MkfsTest, RefusesAnExistingPeregrineMemberUnlessForced) {
  auto old = make_files("old", 2, 20 * kMiB);
  MkfsResult first = mkfs(old);
  std::string fresh = make_file("fresh", 20 * kMiB, '\x11');
  MkfsOptions o;
  o.members = {fresh, old[1]};
  Status s = expect_refused(o, old[1], {fresh, old[0], old[1]});
  EXPECT_MENTIONS(s, "already member 1 of 2 of peregrine volume " + first.superblock.volume_uuid.to_string());
  EXPECT_MENTIONS(s, "--force");

  o.force = true;
  auto r = make_volume(o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_NE(r->superblock.volume_uuid, first.superblock.volume_uuid);
  auto vol = assemble(o.members, MemberFile::Mode::read_only);
  ASSERT_TRUE(vol) << vol.status().message();
  EXPECT_EQ(vol->superblock.volume_uuid, r->superblock.volume_uuid);
}

TEST_F(MkfsTest, RefusesADamagedPeregrineMember) {
  auto old = make_files("old", 1, 40 * kMiB);
  mkfs(old);
  write_bytes(old[0], 100, "garbage");                      // primary checksum broken
  write_bytes(old[0], kBackupSuperblockOffset + 100, "x");  // backup too
  Status s = expect_refused(on(old), old[0], old);
  EXPECT_MENTIONS(s, "damaged peregrine superblock");
}

TEST_F(MkfsTest, RefusesADosPartitionTable) {
  std::string ok = make_file("ok", 20 * kMiB);
  std::string mbr = make_file("mbr", 20 * kMiB);
  write_bytes(mbr, 510, "\x55\xaa");  // what libblkid reports as PTTYPE=dos
  Status s = expect_refused(on({ok, mbr}), mbr, {ok, mbr});
  EXPECT_MENTIONS(s, "holds a dos partition table");

  MkfsOptions forced = on({ok, mbr});
  forced.force = true;
  ASSERT_TRUE(make_volume(forced));
  EXPECT_EQ(read_bytes(mbr, 510, 2), std::string(2, '\0'));  // the old signature is gone
}

TEST_F(MkfsTest, RefusesAnExt4Filesystem) {
  std::string ext4 = make_file("ext4", 20 * kMiB);
  std::string cmd = "mkfs.ext4 -q -F " + ext4 + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "mkfs.ext4 not available";
  Status s = expect_refused(on({ext4}), ext4, {ext4});
  EXPECT_MENTIONS(s, "holds an ext4 filesystem");
}

TEST_F(MkfsTest, RefusesAMemberThatIsTooSmall) {
  auto big = make_files("big", 2, 20 * kMiB, '\x22');
  std::string tiny = make_file("tiny", 3 * kMiB, '\x33');
  Status s = expect_refused(on({big[0], tiny, big[1]}), tiny, {big[0], big[1], tiny});
  EXPECT_MENTIONS(s, "too small");
}

TEST_F(MkfsTest, RefusesAMetadataAreaTooLargeForTheVolume) {
  auto m = make_files("m", 2, 20 * kMiB, '\x44');
  MkfsOptions o = on(m);
  o.meta_size = 32 * kMiB;
  Status s = expect_refused(o, m[0], m);
  EXPECT_MENTIONS(s, "too small");
}

TEST_F(MkfsTest, RefusesTheSameFileTwiceUnderAnotherName) {
  std::string a = make_file("a", 20 * kMiB, '\x55');
  std::string link = path("link-to-a");
  std::filesystem::create_symlink(a, link);
  Status s = expect_refused(on({a, link}), link, {a});
  EXPECT_MENTIONS(s, "same file as member " + a);
}

TEST_F(MkfsTest, RefusesAMemberInUseByAnotherPeregrineProcess) {
  auto m = make_files("m", 2, 20 * kMiB, '\x66');
  int fd = ::open(m[1].c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // what a running daemon holds
  Status s = expect_refused(on(m), m[1], m);
  EXPECT_MENTIONS(s, "in use by another peregrine process");
  ::close(fd);
  EXPECT_TRUE(make_volume(on(m)));
}

TEST_F(MkfsTest, RefusesAMissingMemberWithoutSize) {
  std::string a = make_file("a", 20 * kMiB, '\x77');
  Status s = expect_refused(on({a, path("absent")}), path("absent"), {a});
  EXPECT_FALSE(std::filesystem::exists(path("absent")));
}

TEST_F(MkfsTest, RefusesAMemberThatCannotBeCreatedBeforeGrowingTheOthers) {
  std::string small = make_file("small", 2 * kMiB, '\x21');
  std::string lost = path("no-such-dir/m1");
  MkfsOptions o = on({small, lost});
  o.size = 24 * kMiB;
  Status s = expect_refused(o, lost, {small});
  EXPECT_MENTIONS(s, "not a directory");
  EXPECT_EQ(std::filesystem::file_size(small), 2 * kMiB);
}

TEST_F(MkfsTest, RefusesBadOptionsBeforeTouchingMembers) {
  std::string a = make_file("a", 20 * kMiB, '\x12');
  auto before = snapshot({a});
  for (uint32_t unit : {0u, 2048u, 3u * 4096, 2u << 20}) {
    MkfsOptions o = on({a});
    o.stripe_unit = unit;
    auto r = make_volume(o);
    ASSERT_FALSE(r) << unit;
    EXPECT_MENTIONS(r.status(), "stripe unit");
  }
  MkfsOptions long_label = on({a});
  long_label.label = std::string(64, 'L');
  auto r = make_volume(long_label);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "label");
  MkfsOptions tiny_meta = on({a});
  tiny_meta.meta_size = 1 * kMiB;
  r = make_volume(tiny_meta);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "metadata size");
  MkfsOptions huge_meta = on({a});
  huge_meta.meta_size = ~uint64_t{0} - 4095;  // would wrap when rounded up to stripe rows
  r = make_volume(huge_meta);
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "metadata size");
  EXPECT_TRUE(snapshot({a}) == before);
}

}  // namespace
}  // namespace peregrine::test
