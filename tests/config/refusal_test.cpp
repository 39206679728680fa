// Every way a config file is refused: the message must name the file, the
// line, the key, the value and what is allowed.
#include <gtest/gtest.h>

#include "test_util.h"

namespace peregrine::config {
namespace {

using testing::refusal_of;

// One refused file: the parts its message must contain, and one part it
// must not ("" for none).
struct Refusal {
  const char* name;  // the test's name
  std::string conf;
  std::vector<std::string> parts;
  std::string absent = {};
};

const Refusal kRefusals[] = {
    {"UnknownKeySuggestsTheClosest",
     "[engine]\n\nhigh_watermak_per_drive = 64\n",
     {"test.conf:3:", "unknown key engine.high_watermak_per_drive", "= 64",
      "did you mean engine.high_watermark_per_drive?"}},
    {"ShortenedKeyFindsItsOption",
     "[engine]\nhigh_watermark = 64\n",
     {"test.conf:2:", "engine.high_watermark", "did you mean engine.high_watermark_per_drive?"}},
    {"KeyInTheWrongTable",
     "[fuse]\nqueue_depth = 8\n",
     {"test.conf:2:", "unknown key fuse.queue_depth = 8", "did you mean drive.queue_depth?"}},
    {"UnknownKeyWithNothingClose",
     "[log]\nlevel = \"info\"\ncolour = true\n",
     {"test.conf:3:", "unknown key log.colour = true"},
     "did you mean"},
    {"KeyOutsideAnyTable",
     "high_watermark_per_drive = 64\n",
     {"test.conf:1:", "unknown key high_watermark_per_drive = 64",
      "did you mean engine.high_watermark_per_drive (in [engine])?"}},
    {"UnknownTable",
     "[engien]\nscheduler = \"per-drive\"\n",
     {"test.conf:1:", "unknown table [engien]", "did you mean [engine]?"}},
    {"TableThatIsNotATable", "engine = 5\n", {"test.conf:1:", "engine = 5", "wrong type", "allowed: [engine]"}},
    {"WrongTypeStringForInteger",
     "[fuse]\nworkers = \"four\"\n",
     {"test.conf:2:", "fuse.workers = \"four\"", "wrong type (string)", "allowed: 1..256", "(threads)"}},
    {"WrongTypeFloatForInteger",
     "[engine]\nhigh_watermark_per_drive = 32.5\n",
     {"test.conf:2:", "engine.high_watermark_per_drive = 32.5", "wrong type (float)", "allowed: 1..4096"}},
    {"WrongTypeIntegerForBoolean",
     "[fuse]\nallow_other = 1\n",
     {"test.conf:2:", "fuse.allow_other = 1", "wrong type (integer)", "allowed: true or false"}},
    {"WrongTypeArrayForChoice",
     "[log]\n\n\nlevel = [\"info\"]\n",
     {"test.conf:4:", "log.level = [", "wrong type (array)", "\"error\", \"warn\", \"info\" or \"debug\""}},
    {"AutoOnlyWhereAllowed",
     "[drive]\nmax_merge_iovecs = \"auto\"\n",
     {"test.conf:2:", "drive.max_merge_iovecs = \"auto\"", "wrong type (string)", "allowed: 1..1024"}},
    {"OutOfRangeBelow",
     "[engine]\nhigh_watermark_per_drive = 0\n",
     {"test.conf:2:", "engine.high_watermark_per_drive = 0", "out of range", "allowed: 1..4096",
      "(sub-IOs per member drive)"}},
    {"OutOfRangeAbove",
     "[drive]\nqueue_depth = 5000\n",
     {"test.conf:2:", "drive.queue_depth = 5000", "out of range", "allowed: \"auto\" or 1..4096"}},
    {"NegativeNumber",
     "[stats]\nlog_interval_s = -1\n",
     {"test.conf:2:", "stats.log_interval_s = -1", "out of range", "allowed: 0..86400", "(seconds)"}},
    {"NotAPowerOfTwo",
     "[drive]\nmax_merge_bytes = 1000000\n",
     {"test.conf:2:", "drive.max_merge_bytes = 1000000", "not a power of two", "allowed: a power of two, 4096..8388608",
      "(bytes)"}},
    {"UnknownChoiceSuggests",
     "[fuse]\ncache = \"writebak\"\n",
     {"test.conf:2:", "fuse.cache = \"writebak\"", "unknown value; did you mean \"writeback\"?",
      "allowed: \"direct\" or \"writeback\""}},
    {"BadCpuList",
     "[drive]\ncpus = \"0,3-1\"\n",
     {"test.conf:2:", "drive.cpus = \"0,3-1\"", "runs backwards", "allowed: \"auto\", \"none\" or a CPU list"}},
    {"LowWatermarkAboveHigh",
     "[engine]\nhigh_watermark_per_drive = 16\nlow_watermark_per_drive = 20\n",
     {"test.conf:3:", "engine.low_watermark_per_drive = 20", "above engine.high_watermark_per_drive = 16 (test.conf:2)",
      "allowed: 0..16"}},
    {"LowWatermarkAboveDefaultHigh",
     "[engine]\nlow_watermark_per_drive = 33\n",
     {"test.conf:2:", "engine.low_watermark_per_drive = 33",
      "above engine.high_watermark_per_drive = 32 (built-in default)", "allowed: 0..32"}},
    {"PressurePointsInverted",
     "[engine]\nlow_pressure_per_drive = 900\nhigh_pressure_per_drive = 800\n",
     {"test.conf:2:", "engine.low_pressure_per_drive = 900",
      "not below engine.high_pressure_per_drive = 800 (test.conf:3)", "allowed: 1..799"}},
    {"PressurePointsEqual",
     "[engine]\nlow_pressure_per_drive = 1024\n",
     {"test.conf:2:", "engine.low_pressure_per_drive = 1024", "not below engine.high_pressure_per_drive = 1024"}},
    {"HighPressureBelowDefaultLowBlamesTheLineThatWasWritten",
     "[engine]\nhigh_pressure_per_drive = 500\n",
     {"test.conf:2:", "engine.high_pressure_per_drive = 500",
      "not above engine.low_pressure_per_drive = 768 (built-in default)", "allowed: 769..1048576"}},
    {"CongestionAboveMaxBackground",
     "[fuse]\nmax_background = 64\ncongestion_threshold = 100\n",
     {"test.conf:3:", "fuse.congestion_threshold = 100", "above fuse.max_background = 64 (test.conf:2)"}},
    {"SyntaxErrorHasLineAndColumn", "[engine]\nhigh_watermark_per_drive = \n", {"test.conf:2:", "TOML syntax error"}},
    {"DuplicateKeyIsASyntaxError",
     "[fuse]\nworkers = 2\nworkers = 3\n",
     {"test.conf:3:", "TOML syntax error", "workers"}},
};

class ConfigRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(ConfigRefusal, MessageNamesWhatIsWrong) {
  const Refusal& r = GetParam();
  const std::string m = refusal_of(r.conf);
  for (const std::string& p : r.parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
  if (!r.absent.empty()) {
    EXPECT_EQ(m.find(r.absent), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ConfigRefusal, ::testing::ValuesIn(kRefusals),
                         [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace peregrine::config
