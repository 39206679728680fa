#include <gtest/gtest.h>

#include "peregrine/config/cpu_list.h"

namespace peregrine::config {
namespace {

TEST(CpuList, AutoAndNone) {
  EXPECT_EQ(parse_cpu_affinity("auto")->mode, CpuAffinity::Mode::kAuto);
  EXPECT_EQ(parse_cpu_affinity("none")->mode, CpuAffinity::Mode::kNone);
}

TEST(CpuList, ListsAndRangesAreSortedAndCanonical) {
  auto a = parse_cpu_affinity("5,0,2-3,3");
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_EQ(a->mode, CpuAffinity::Mode::kList);
  EXPECT_EQ(a->cpus, (std::vector<unsigned>{0, 2, 3, 5}));
  EXPECT_EQ(a->to_string(), "0,2-3,5");
  EXPECT_EQ(*parse_cpu_affinity(a->to_string()), *a);
}

TEST(CpuList, RefusesNonsense) {
  for (const char* bad : {"", "x", "1,", "3-1", "1-", "-1", "0;1", "1024", "0-2000"}) {
    auto a = parse_cpu_affinity(bad);
    EXPECT_FALSE(a) << "accepted '" << bad << "'";
  }
}

}  // namespace
}  // namespace peregrine::config
