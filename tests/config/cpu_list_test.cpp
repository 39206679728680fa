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

// drive.cpus naming a CPU the machine does not have (or this process may
// not use) is refused, naming the key, the CPU and what there is.
TEST(CpuList, CpusTheMachineDoesNotHaveAreRefused) {
  const std::vector<unsigned> online = {0, 1, 2, 3}, allowed = {0, 1, 2};
  EXPECT_TRUE(check_cpus_usable(*parse_cpu_affinity("0-2"), "drive.cpus", online, allowed));
  EXPECT_TRUE(check_cpus_usable(*parse_cpu_affinity("auto"), "drive.cpus", online, allowed));
  EXPECT_TRUE(check_cpus_usable(*parse_cpu_affinity("none"), "drive.cpus", online, allowed));

  Status absent = check_cpus_usable(*parse_cpu_affinity("0,7"), "drive.cpus", online, allowed);
  EXPECT_EQ(absent.message(),
            "drive.cpus = 0,7: this machine has no CPU 7 online (CPUs online: 0-3; this process may run on 0-2)");
  Status forbidden = check_cpus_usable(*parse_cpu_affinity("3"), "drive.cpus", online, allowed);
  EXPECT_EQ(forbidden.message().rfind("drive.cpus = 3: this process may not run on CPU 3 (it may run on 0-2", 0), 0u)
      << forbidden.message();
}

// On this machine (fewer than 1024 CPUs): the highest CPU number accepted is not there.
TEST(CpuList, CheckOnThisMachine) {
  Status s = check_cpus_usable(*parse_cpu_affinity("1023"), "drive.cpus");
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("CPU 1023"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace peregrine::config
