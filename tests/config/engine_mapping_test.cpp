// Settings -> EngineConfig for a volume of N drives.
#include <gtest/gtest.h>

#include "peregrine/config/engine_mapping.h"
#include "peregrine/config/overrides.h"

namespace peregrine::config {
namespace {

TEST(EngineMapping, DefaultsScaleWithTheMemberCount) {
  EngineConfig e = engine_config(Settings::defaults(), 8);
  EXPECT_EQ(e.scheduler, peregrine::Scheduler::per_drive);
  EXPECT_EQ(e.high_watermark, 256u);  // 32 per drive x 8 (Falcon section 4.3)
  EXPECT_EQ(e.low_watermark, 8u);
  EXPECT_TRUE(e.inline_dispatch);   // the config default (measured, docs/performance-history.md)
  EXPECT_EQ(e.pressure_low, 768u);  // per drive: not scaled
  EXPECT_EQ(e.pressure_high, 1024u);
  EXPECT_EQ(e.max_io_bytes, 1u << 20);
  EXPECT_EQ(e.max_iovecs, 64u);
  EXPECT_TRUE(e.drive_cpus.empty());
}

TEST(EngineMapping, OverridesReachTheEngine) {
  Config c;
  ASSERT_TRUE(apply_overrides(c, {"engine.scheduler=per-volume", "engine.low_watermark_per_drive=0", "drive.cpus=2-3",
                                  "drive.max_merge_iovecs=8"}));
  EngineConfig e = engine_config(c.settings, 3);
  EXPECT_EQ(e.scheduler, peregrine::Scheduler::per_volume);
  EXPECT_FALSE(e.inline_dispatch);  // low 0 = never inline
  EXPECT_NE(e.low_watermark, 0u);   // 0 would mean "engine default"
  EXPECT_EQ(e.max_iovecs, 8u);
  EXPECT_EQ(e.drive_cpus, (std::vector<int>{2, 3, 2}));
}

}  // namespace
}  // namespace peregrine::config
