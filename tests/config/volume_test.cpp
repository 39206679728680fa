// [volume.NAME] sections: parsing, refusals, and selection for mount NAME.
#include <gtest/gtest.h>

#include "peregrine/config/overrides.h"
#include "test_util.h"

namespace peregrine::config {
namespace {

using testing::parse_ok;
using testing::refusal_of;

constexpr const char* kTwoVolumes =
    "[engine]\n"
    "high_watermark_per_drive = 40\n"
    "[volume.zeta]\n"  // line 3
    "members = [\"/dev/disk/by-id/a\", \"/dev/disk/by-id/b\"]\n"
    "mountpoint = \"/srv/zeta\"\n"
    "options = \"engine.high_watermark_per_drive=64,drive.cpus=0,2-3,fuse.allow_other\"\n"  // line 6
    "[volume.alpha]\n"
    "members = [\"/var/lib/a.img\"]\n";

void expect_parts(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts)
    EXPECT_NE(message.find(p), std::string::npos) << "missing '" << p << "' in: " << message;
}

TEST(ConfigVolume, SectionsInFileOrder) {
  Config c = parse_ok(kTwoVolumes);
  ASSERT_EQ(c.volumes.size(), 2u);
  EXPECT_EQ(c.volumes[0].name, "zeta");
  EXPECT_EQ(c.volumes[0].members, (std::vector<std::string>{"/dev/disk/by-id/a", "/dev/disk/by-id/b"}));
  EXPECT_EQ(c.volumes[0].mountpoint, "/srv/zeta");
  EXPECT_EQ(c.volumes[0].origin.line, 3u);
  EXPECT_EQ(c.volumes[1].name, "alpha");
  EXPECT_EQ(c.volumes[1].mountpoint, "");
  // The volume's options do not leak into the file-wide settings.
  EXPECT_EQ(c.settings.engine.high_watermark_per_drive, 40u);
}

TEST(ConfigVolume, ForVolumeAppliesItsOptionsThenTheCommandLine) {
  Config c = parse_ok(kTwoVolumes);
  auto z = for_volume(c, "zeta");
  ASSERT_TRUE(z) << z.status().message();
  EXPECT_EQ(z->settings.engine.high_watermark_per_drive, 64u);
  EXPECT_EQ(z->settings.drive.cpus.to_string(), "0,2-3");
  EXPECT_TRUE(z->settings.fuse.allow_other);
  EXPECT_EQ(z->origin_of("engine.high_watermark_per_drive").to_string(), "test.conf:6 (volume.zeta.options)");

  auto cl = for_volume(c, "zeta", {"engine.high_watermark_per_drive=128"});
  ASSERT_TRUE(cl) << cl.status().message();
  EXPECT_EQ(cl->settings.engine.high_watermark_per_drive, 128u);
  EXPECT_EQ(cl->origin_of("engine.high_watermark_per_drive").to_string(), "command line -o");

  auto a = for_volume(c, "alpha");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->settings.engine.high_watermark_per_drive, 40u);  // the file's table
}

TEST(ConfigVolume, UnknownVolumeListsTheDefinedOnes) {
  Config c = parse_ok(kTwoVolumes);
  auto v = for_volume(c, "beta");
  ASSERT_FALSE(v);
  expect_parts(v.status().message(),
               {"unknown volume 'beta'", "test.conf has no [volume.beta]", "volumes defined: zeta, alpha"});
  auto none = for_volume(Config{}, "x");
  ASSERT_FALSE(none);
  expect_parts(none.status().message(), {"unknown volume 'x'", "no config file was read"});
}

TEST(ConfigVolume, BadOptionsAreRefusedAtLoadWithTheirLine) {
  std::string m = refusal_of("[volume.v]\nmembers = [\"/a\"]\noptions = \"engine.high_watermark_per_drive=0\"\n");
  expect_parts(m, {"test.conf:3", "volume.v.options", "engine.high_watermark_per_drive = 0", "out of range",
                   "allowed: 1..4096"});
  m = refusal_of("[volume.v]\nmembers = [\"/a\"]\n\noptions = \"fuse.worker=3\"\n");
  expect_parts(m, {"test.conf:4", "unknown key fuse.worker = 3", "did you mean fuse.workers?"});
}

TEST(ConfigVolume, VolumeOptionsCheckedAgainstTheFileTables) {
  // low 20 is fine against the default high 32, not against the file's 16.
  std::string m = refusal_of(
      "[engine]\nhigh_watermark_per_drive = 16\n[volume.v]\nmembers = [\"/a\"]\n"
      "options = \"engine.low_watermark_per_drive=20\"\n");
  expect_parts(m, {"test.conf:5", "engine.low_watermark_per_drive = 20",
                   "above engine.high_watermark_per_drive = 16 (test.conf:2)"});
}

TEST(ConfigVolume, Refusals) {
  expect_parts(refusal_of("[volume.v]\nmountpoint = \"/mnt\"\n"),
               {"test.conf:1:", "volume.v.members", "required key missing"});
  expect_parts(refusal_of("[volume.v]\nmembers = []\n"), {"test.conf:2:", "volume.v.members = []", "no members"});
  expect_parts(refusal_of("[volume.v]\nmembers = \"/dev/sda\"\n"),
               {"test.conf:2:", "volume.v.members = \"/dev/sda\"", "wrong type", "allowed: a non-empty array"});
  expect_parts(refusal_of("[volume.v]\nmembers = [\"/a\", \"/a\"]\n"),
               {"test.conf:2:", "volume.v.members", "member listed twice"});
  expect_parts(refusal_of("[volume.v]\nmembers = [\"/a\", 3]\n"),
               {"test.conf:2:", "volume.v.members = 3", "not a path"});
  expect_parts(refusal_of("[volume.v]\nmembers = [\"/a\"]\nmountpoint = \"srv/v\"\n"),
               {"test.conf:3:", "volume.v.mountpoint = \"srv/v\"", "not an absolute path"});
  expect_parts(refusal_of("[volume.v]\nmembers = [\"/a\"]\nmount_point = \"/srv/v\"\n"),
               {"test.conf:3:", "unknown key volume.v.mount_point", "did you mean volume.v.mountpoint?"});
  expect_parts(refusal_of("[volume.\"my vol\"]\nmembers = [\"/a\"]\n"),
               {"test.conf:1:", "volume.my vol", "bad volume name"});
  expect_parts(refusal_of("volume = 3\n"), {"test.conf:1:", "volume = 3", "wrong type"});
}

}  // namespace
}  // namespace peregrine::config
