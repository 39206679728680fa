// Loading valid files: defaults, values, origins, file errors.
#include <gtest/gtest.h>

#include <cerrno>

#include "peregrine/config/load.h"
#include "peregrine/config/render.h"
#include "test_util.h"

namespace peregrine::config {
namespace {

using testing::kFile;
using testing::parse_ok;
using testing::values;

TEST(ConfigDefaults, MatchTheDocumentedValues) {
  Settings s = Settings::defaults();
  EXPECT_EQ(s.engine.scheduler, Scheduler::kPerDrive);
  EXPECT_EQ(s.engine.low_watermark_per_drive, 1u);
  EXPECT_EQ(s.engine.high_watermark_per_drive, 32u);
  EXPECT_EQ(s.engine.high_watermark(8), 256u);  // Falcon: 256 for an 8-SSD volume
  EXPECT_TRUE(s.engine.inline_dispatch);        // measured faster through FUSE (docs/performance-history.md)
  EXPECT_EQ(s.engine.low_pressure_per_drive, 768u);
  EXPECT_EQ(s.engine.high_pressure_per_drive, 1024u);
  EXPECT_FALSE(s.drive.queue_depth.has_value());
  EXPECT_EQ(s.drive.cpus.mode, CpuAffinity::Mode::kAuto);
  EXPECT_EQ(s.drive.max_merge_bytes, 1u << 20);
  EXPECT_EQ(s.drive.max_merge_iovecs, 64u);
  EXPECT_FALSE(s.io_uring.sq_entries.has_value());
  EXPECT_FALSE(s.io_uring.sqpoll);
  EXPECT_EQ(s.fuse.workers, 2u);
  EXPECT_EQ(s.fuse.max_background, 256u);
  EXPECT_EQ(s.fuse.effective_congestion_threshold(), 192u);
  EXPECT_EQ(s.fuse.max_request_bytes, 1u << 20);
  EXPECT_EQ(s.fuse.cache, CacheMode::kWriteback);
  EXPECT_EQ(s.fuse.attr_timeout_s, 3600u);
  EXPECT_EQ(s.fuse.entry_timeout_s, 3600u);
  EXPECT_EQ(s.fuse.negative_timeout_s, 3600u);
  EXPECT_FALSE(s.fuse.allow_other);
  EXPECT_TRUE(s.stats.enabled);
  EXPECT_EQ(s.log.level, LogLevel::kInfo);
  EXPECT_EQ(s.log.target, LogTarget::kAuto);
}

TEST(ConfigDefaults, EveryDefaultPassesItsOwnValidation) {
  // A default outside its own range would make the shipped file unloadable.
  for (const Option& o : options()) {
    EXPECT_TRUE(parse_text(
        "[" + std::string(o.table()) + "]\n" + std::string(o.name()) + " = " + format_value(o.default_value) + "\n",
        kFile))
        << o.key;
  }
}

TEST(ConfigLoad, EmptyFileIsAllDefaults) {
  Config c = parse_ok("");
  EXPECT_EQ(values(c.settings), values(Settings::defaults()));
  EXPECT_TRUE(c.origins.empty());
  EXPECT_EQ(c.source, kFile);
}

TEST(ConfigLoad, ValuesOfEveryKindAndTheirLines) {
  Config c = parse_ok(
      "# comment\n"
      "[engine]\n"
      "scheduler = \"per-volume\"\n"     // line 3
      "high_watermark_per_drive = 64\n"  // line 4
      "[drive]\n"
      "queue_depth = 128\n"  // line 6
      "cpus = \"0,2-3\"\n"   // line 7
      "max_merge_bytes = 262144\n"
      "[io_uring]\n"
      "sq_entries = \"auto\"\n"
      "[fuse]\n"
      "cache = \"writeback\"\n"
      "allow_other = true\n"  // line 13
      "[log]\n"
      "level = \"debug\"\n");
  const Settings& s = c.settings;
  EXPECT_EQ(s.engine.scheduler, Scheduler::kPerVolume);
  EXPECT_EQ(s.engine.high_watermark_per_drive, 64u);
  EXPECT_EQ(s.engine.low_watermark_per_drive, 1u);  // untouched: default
  EXPECT_EQ(s.drive.queue_depth, 128u);
  EXPECT_EQ(s.drive.cpus.cpus, (std::vector<unsigned>{0, 2, 3}));
  EXPECT_EQ(s.drive.max_merge_bytes, 262144u);
  EXPECT_FALSE(s.io_uring.sq_entries.has_value());
  EXPECT_EQ(s.fuse.cache, CacheMode::kWriteback);
  EXPECT_TRUE(s.fuse.allow_other);
  EXPECT_EQ(s.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.origin_of("engine.scheduler").to_string(), "test.conf:3");
  EXPECT_EQ(c.origin_of("engine.high_watermark_per_drive").line, 4u);
  EXPECT_EQ(c.origin_of("drive.cpus").line, 7u);
  EXPECT_EQ(c.origin_of("fuse.allow_other").line, 13u);
  EXPECT_TRUE(c.origin_of("engine.low_watermark_per_drive").is_default());
}

TEST(ConfigLoad, DottedKeysAtTheTopAreTheSameAsTables) {
  Config c = parse_ok("engine.high_watermark_per_drive = 48\nfuse.workers = 2\n");
  EXPECT_EQ(c.settings.engine.high_watermark_per_drive, 48u);
  EXPECT_EQ(c.settings.fuse.workers, 2u);
}

TEST(ConfigLoad, MissingFileIsENOENT) {
  auto c = load_file("/nonexistent/peregrine.conf");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().errnum(), ENOENT);
  EXPECT_NE(c.status().message().find("/nonexistent/peregrine.conf"), std::string::npos);
}

// A directory opens and reads as nothing; it must not pass for an empty file.
TEST(ConfigLoad, DirectoryIsEISDIR) {
  auto c = load_file("/");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().errnum(), EISDIR);
  EXPECT_EQ(c.status().message(), "/: Is a directory");
}

TEST(ConfigLoad, EffectiveOutputLoadsBackToTheSameSettings) {
  Config c = parse_ok(
      "[engine]\nhigh_watermark_per_drive = 40\n[drive]\ncpus = \"1-2\"\n"
      "[volume.a]\nmembers = [\"/dev/x\", \"/dev/y\"]\nmountpoint = \"/mnt/a\"\n");
  std::string text = render_effective(c);
  auto again = parse_text(text, "effective.conf");
  ASSERT_TRUE(again) << again.status().message() << "\n" << text;
  EXPECT_EQ(values(again->settings), values(c.settings));
  ASSERT_EQ(again->volumes.size(), 1u);
  EXPECT_EQ(again->volumes[0].members, c.volumes[0].members);
  EXPECT_NE(text.find("high_watermark_per_drive = 40  # test.conf:2"), std::string::npos) << text;
  EXPECT_NE(text.find("low_watermark_per_drive = 1  # built-in default"), std::string::npos) << text;
}

// Found by tests/fuzz/config_fuzz.cpp: a path with a control character was
// printed raw inside a TOML string, so the effective configuration of a
// valid file did not read back.
TEST(ConfigLoad, EffectiveOutputEscapesControlCharacters) {
  Config c = parse_ok(
      "[volume.a]\nmembers = [\"/dev/x\\ny\", \"/m\\t\\u0001\\u007f\\\"\\\\\"]\n"
      "mountpoint = \"/mnt/\\r\\b\\f\u00e9\"\n");
  ASSERT_EQ(c.volumes.size(), 1u);
  EXPECT_EQ(c.volumes[0].members[0], "/dev/x\ny");
  EXPECT_EQ(c.volumes[0].members[1], "/m\t\x01\x7f\"\\");
  std::string text = render_effective(c);
  auto again = parse_text(text, "effective.conf");
  ASSERT_TRUE(again) << again.status().message() << "\n" << text;
  ASSERT_EQ(again->volumes.size(), 1u);
  EXPECT_EQ(again->volumes[0].members, c.volumes[0].members);
  EXPECT_EQ(again->volumes[0].mountpoint, c.volumes[0].mountpoint);
  EXPECT_NE(text.find("\"/m\\t\\u0001\\u007F\\\"\\\\\""), std::string::npos) << text;
}

}  // namespace
}  // namespace peregrine::config
