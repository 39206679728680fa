// -o overrides: precedence over the file, same validation, mount option split.
#include <gtest/gtest.h>

#include "peregrine/config/overrides.h"
#include "test_util.h"

namespace peregrine::config {
namespace {

using testing::parse_ok;

void expect_parts(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts)
    EXPECT_NE(message.find(p), std::string::npos) << "missing '" << p << "' in: " << message;
}

TEST(ConfigPrecedence, CommandLineOverFileOverDefaults) {
  Config c = parse_ok("[engine]\nhigh_watermark_per_drive = 48\n[fuse]\nworkers = 2\n");
  ASSERT_TRUE(apply_overrides(c, {"engine.high_watermark_per_drive=512", "fuse.cache=writeback"}));
  EXPECT_EQ(c.settings.engine.high_watermark_per_drive, 512u);  // -o beats the file
  EXPECT_EQ(c.settings.fuse.workers, 2u);                       // file beats default
  EXPECT_EQ(c.settings.fuse.cache, CacheMode::kWriteback);      // -o beats default
  EXPECT_EQ(c.settings.engine.low_watermark_per_drive, 1u);     // default
  EXPECT_EQ(c.origin_of("engine.high_watermark_per_drive").to_string(), "command line -o");
  EXPECT_EQ(c.origin_of("fuse.workers").to_string(), "test.conf:4");
}

TEST(ConfigPrecedence, LaterOverrideWins) {
  Config c;
  ASSERT_TRUE(apply_overrides(c, {"fuse.workers=2", "fuse.workers=6"}));
  EXPECT_EQ(c.settings.fuse.workers, 6u);
}

TEST(ConfigOverrides, EveryKind) {
  Config c;
  Status s = apply_overrides(c, {"drive.queue_depth=auto", "io_uring.sq_entries=256", "drive.cpus=0,2-3",
                                 "io_uring.sqpoll", "stats.enabled=false", "log.target=\"syslog\""});
  ASSERT_TRUE(s) << s.message();
  EXPECT_FALSE(c.settings.drive.queue_depth.has_value());
  EXPECT_EQ(c.settings.io_uring.sq_entries, 256u);
  EXPECT_EQ(c.settings.drive.cpus.to_string(), "0,2-3");
  EXPECT_TRUE(c.settings.io_uring.sqpoll);
  EXPECT_FALSE(c.settings.stats.enabled);
  EXPECT_EQ(c.settings.log.target, LogTarget::kSyslog);
}

TEST(ConfigOverrides, RefusedLikeTheFile) {
  Config c;
  Status s = apply_overrides(c, {"engine.hgh_watermark_per_drive=3"});
  expect_parts(s.message(), {"command line -o", "unknown key engine.hgh_watermark_per_drive = 3",
                             "did you mean engine.high_watermark_per_drive?"});
  s = apply_overrides(c, {"fuse.workers=many"});
  expect_parts(s.message(), {"command line -o", "fuse.workers = many", "wrong type", "allowed: 1..256"});
  s = apply_overrides(c, {"fuse.workers=0"});
  expect_parts(s.message(), {"fuse.workers = 0", "out of range", "allowed: 1..256"});
  s = apply_overrides(c, {"fuse.allow_other=yes"});
  expect_parts(s.message(), {"fuse.allow_other = yes", "wrong type", "allowed: true or false"});
  s = apply_overrides(c, {"fuse.workers"});
  expect_parts(s.message(), {"fuse.workers", "missing value"});
}

TEST(ConfigOverrides, OrderCheckedAfterOverrides) {
  Config c = parse_ok("[engine]\nhigh_watermark_per_drive = 16\n");
  Status s = apply_overrides(c, {"engine.low_watermark_per_drive=20"});
  expect_parts(s.message(), {"command line -o", "engine.low_watermark_per_drive = 20",
                             "above engine.high_watermark_per_drive = 16 (test.conf:2)"});
  // Raising both together is fine.
  Config d = parse_ok("[engine]\nhigh_watermark_per_drive = 16\n");
  EXPECT_TRUE(apply_overrides(d, {"engine.low_watermark_per_drive=20", "engine.high_watermark_per_drive=64"}));
}

TEST(MountOptions, SplitsSettingsFromMountFlags) {
  MountOptions m =
      split_mount_options("ro,engine.high_watermark_per_drive=64,drive.cpus=0,2-3,noatime,fuse.allow_other");
  EXPECT_EQ(m.settings,
            (std::vector<std::string>{"engine.high_watermark_per_drive=64", "drive.cpus=0,2-3", "fuse.allow_other"}));
  EXPECT_EQ(m.other, (std::vector<std::string>{"ro", "noatime"}));
}

TEST(MountOptions, QuotesKeepCommas) {
  MountOptions m = split_mount_options("drive.cpus=\"4,6-7\",rw");
  EXPECT_EQ(m.settings, (std::vector<std::string>{"drive.cpus=\"4,6-7\""}));
  EXPECT_EQ(m.other, (std::vector<std::string>{"rw"}));
  Config c;
  ASSERT_TRUE(apply_overrides(c, m.settings));
  EXPECT_EQ(c.settings.drive.cpus.to_string(), "4,6-7");
}

TEST(MountOptions, NumbersAfterOtherSettingsAreNotGlued) {
  MountOptions m = split_mount_options("fuse.workers=2,3");
  EXPECT_EQ(m.settings, (std::vector<std::string>{"fuse.workers=2"}));
  EXPECT_EQ(m.other, (std::vector<std::string>{"3"}));
}

}  // namespace
}  // namespace peregrine::config
