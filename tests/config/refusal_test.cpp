// Every way a config file is refused: the message must name the file, the
// line, the key, the value and what is allowed.
#include <gtest/gtest.h>

#include "test_util.h"

namespace peregrine::config {
namespace {

using testing::refusal_of;

// Asserts `message` contains each of `parts`.
void expect_parts(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "missing '" << p << "' in: " << message;
}

TEST(ConfigRefusal, UnknownKeySuggestsTheClosest) {
  std::string m = refusal_of("[engine]\n\nhigh_watermak_per_drive = 64\n");
  expect_parts(m, {"test.conf:3:", "unknown key engine.high_watermak_per_drive", "= 64",
                   "did you mean engine.high_watermark_per_drive?"});
}

TEST(ConfigRefusal, ShortenedKeyFindsItsOption) {
  std::string m = refusal_of("[engine]\nhigh_watermark = 64\n");
  expect_parts(m, {"test.conf:2:", "engine.high_watermark", "did you mean engine.high_watermark_per_drive?"});
}

TEST(ConfigRefusal, KeyInTheWrongTable) {
  std::string m = refusal_of("[fuse]\nqueue_depth = 8\n");
  expect_parts(m, {"test.conf:2:", "unknown key fuse.queue_depth = 8", "did you mean drive.queue_depth?"});
}

TEST(ConfigRefusal, UnknownKeyWithNothingClose) {
  std::string m = refusal_of("[log]\nlevel = \"info\"\ncolour = true\n");
  expect_parts(m, {"test.conf:3:", "unknown key log.colour = true"});
  EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;
}

TEST(ConfigRefusal, KeyOutsideAnyTable) {
  std::string m = refusal_of("high_watermark_per_drive = 64\n");
  expect_parts(m, {"test.conf:1:", "unknown key high_watermark_per_drive = 64",
                   "did you mean engine.high_watermark_per_drive (in [engine])?"});
}

TEST(ConfigRefusal, UnknownTable) {
  std::string m = refusal_of("[engien]\nscheduler = \"per-drive\"\n");
  expect_parts(m, {"test.conf:1:", "unknown table [engien]", "did you mean [engine]?"});
}

TEST(ConfigRefusal, TableThatIsNotATable) {
  std::string m = refusal_of("engine = 5\n");
  expect_parts(m, {"test.conf:1:", "engine = 5", "wrong type", "allowed: [engine]"});
}

TEST(ConfigRefusal, WrongTypeStringForInteger) {
  std::string m = refusal_of("[fuse]\nworkers = \"four\"\n");
  expect_parts(m, {"test.conf:2:", "fuse.workers = \"four\"", "wrong type (string)", "allowed: 1..256", "(threads)"});
}

TEST(ConfigRefusal, WrongTypeFloatForInteger) {
  std::string m = refusal_of("[engine]\nhigh_watermark_per_drive = 32.5\n");
  expect_parts(m, {"test.conf:2:", "engine.high_watermark_per_drive = 32.5", "wrong type (float)", "allowed: 1..4096"});
}

TEST(ConfigRefusal, WrongTypeIntegerForBoolean) {
  std::string m = refusal_of("[fuse]\nallow_other = 1\n");
  expect_parts(m, {"test.conf:2:", "fuse.allow_other = 1", "wrong type (integer)", "allowed: true or false"});
}

TEST(ConfigRefusal, WrongTypeArrayForChoice) {
  std::string m = refusal_of("[log]\n\n\nlevel = [\"info\"]\n");
  expect_parts(m, {"test.conf:4:", "log.level = [", "wrong type (array)", "\"error\", \"warn\", \"info\" or \"debug\""});
}

TEST(ConfigRefusal, AutoOnlyWhereAllowed) {
  std::string m = refusal_of("[drive]\nmax_merge_iovecs = \"auto\"\n");
  expect_parts(m, {"test.conf:2:", "drive.max_merge_iovecs = \"auto\"", "wrong type (string)", "allowed: 1..1024"});
}

TEST(ConfigRefusal, OutOfRangeBelow) {
  std::string m = refusal_of("[engine]\nhigh_watermark_per_drive = 0\n");
  expect_parts(m, {"test.conf:2:", "engine.high_watermark_per_drive = 0", "out of range", "allowed: 1..4096",
                   "(sub-IOs per member drive)"});
}

TEST(ConfigRefusal, OutOfRangeAbove) {
  std::string m = refusal_of("[drive]\nqueue_depth = 5000\n");
  expect_parts(m, {"test.conf:2:", "drive.queue_depth = 5000", "out of range", "allowed: \"auto\" or 1..4096"});
}

TEST(ConfigRefusal, NegativeNumber) {
  std::string m = refusal_of("[stats]\nlog_interval_s = -1\n");
  expect_parts(m, {"test.conf:2:", "stats.log_interval_s = -1", "out of range", "allowed: 0..86400", "(seconds)"});
}

TEST(ConfigRefusal, NotAPowerOfTwo) {
  std::string m = refusal_of("[drive]\nmax_merge_bytes = 1000000\n");
  expect_parts(m, {"test.conf:2:", "drive.max_merge_bytes = 1000000", "not a power of two",
                   "allowed: a power of two, 4096..8388608", "(bytes)"});
}

TEST(ConfigRefusal, UnknownChoiceSuggests) {
  std::string m = refusal_of("[fuse]\ncache = \"writebak\"\n");
  expect_parts(m, {"test.conf:2:", "fuse.cache = \"writebak\"", "unknown value; did you mean \"writeback\"?",
                   "allowed: \"direct\" or \"writeback\""});
}

TEST(ConfigRefusal, BadCpuList) {
  std::string m = refusal_of("[drive]\ncpus = \"0,3-1\"\n");
  expect_parts(m, {"test.conf:2:", "drive.cpus = \"0,3-1\"", "runs backwards", "allowed: \"auto\", \"none\" or a CPU list"});
}

TEST(ConfigRefusal, LowWatermarkAboveHigh) {
  std::string m = refusal_of("[engine]\nhigh_watermark_per_drive = 16\nlow_watermark_per_drive = 20\n");
  expect_parts(m, {"test.conf:3:", "engine.low_watermark_per_drive = 20",
                   "above engine.high_watermark_per_drive = 16 (test.conf:2)", "allowed: 0..16"});
}

TEST(ConfigRefusal, LowWatermarkAboveDefaultHigh) {
  std::string m = refusal_of("[engine]\nlow_watermark_per_drive = 33\n");
  expect_parts(m, {"test.conf:2:", "engine.low_watermark_per_drive = 33",
                   "above engine.high_watermark_per_drive = 32 (built-in default)", "allowed: 0..32"});
}

TEST(ConfigRefusal, PressurePointsInverted) {
  std::string m = refusal_of("[engine]\nlow_pressure_per_drive = 900\nhigh_pressure_per_drive = 800\n");
  expect_parts(m, {"test.conf:2:", "engine.low_pressure_per_drive = 900",
                   "not below engine.high_pressure_per_drive = 800 (test.conf:3)", "allowed: 1..799"});
}

TEST(ConfigRefusal, PressurePointsEqual) {
  std::string m = refusal_of("[engine]\nlow_pressure_per_drive = 1024\n");
  expect_parts(m, {"test.conf:2:", "engine.low_pressure_per_drive = 1024", "not below engine.high_pressure_per_drive = 1024"});
}

TEST(ConfigRefusal, HighPressureBelowDefaultLowBlamesTheLineThatWasWritten) {
  std::string m = refusal_of("[engine]\nhigh_pressure_per_drive = 500\n");
  expect_parts(m, {"test.conf:2:", "engine.high_pressure_per_drive = 500",
                   "not above engine.low_pressure_per_drive = 768 (built-in default)", "allowed: 769..1048576"});
}

TEST(ConfigRefusal, CongestionAboveMaxBackground) {
  std::string m = refusal_of("[fuse]\nmax_background = 64\ncongestion_threshold = 100\n");
  expect_parts(m, {"test.conf:3:", "fuse.congestion_threshold = 100", "above fuse.max_background = 64 (test.conf:2)"});
}

TEST(ConfigRefusal, SyntaxErrorHasLineAndColumn) {
  std::string m = refusal_of("[engine]\nhigh_watermark_per_drive = \n");
  expect_parts(m, {"test.conf:2:", "TOML syntax error"});
}

TEST(ConfigRefusal, DuplicateKeyIsASyntaxError) {
  std::string m = refusal_of("[fuse]\nworkers = 2\nworkers = 3\n");
  expect_parts(m, {"test.conf:3:", "TOML syntax error", "workers"});
}

}  // namespace
}  // namespace peregrine::config
