// CallerCpu: the processor field of /proc/<tid>/stat, counted after the
// command name's last ')' (names may hold spaces and parentheses); a thread
// held to one CPU is found there; no thread, no CPU.
#include "peregrine/fs/caller_cpu.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace peregrine::fs {
namespace {

// A stat line with `name` as the command and `cpu` as field 39.
std::string stat_line(const std::string& name, int cpu) {
  std::string line = "4242 (" + name + ") S";
  for (int field = 4; field <= 52; ++field) line += " " + std::to_string(field == 39 ? cpu : field * 10);
  return line + "\n";
}

TEST(CallerCpuTest, TheProcessorFieldIsCountedAfterTheName) {
  EXPECT_EQ(CallerCpu::parse_stat(stat_line("ls", 3)), 3);
  EXPECT_EQ(CallerCpu::parse_stat(stat_line("a b) c (d", 1)), 1) << "spaces and parentheses in the name";
  EXPECT_EQ(CallerCpu::parse_stat(stat_line("x", 0)), 0);
}

TEST(CallerCpuTest, ALineWithoutTheFieldGivesNoCpu) {
  EXPECT_EQ(CallerCpu::parse_stat(""), -1);
  EXPECT_EQ(CallerCpu::parse_stat("4242 ls S 1 2 3"), -1) << "no name in parentheses";
  EXPECT_EQ(CallerCpu::parse_stat("4242 (ls) S 1 2 3"), -1) << "too few fields";
  std::string bad = stat_line("ls", 5);
  bad.replace(bad.find(" 5 "), 3, " 5x ");
  EXPECT_EQ(CallerCpu::parse_stat(bad), -1) << "not a number";
}

TEST(CallerCpuTest, AThreadHeldToOneCpuIsFoundThere) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) last = cpu;
  }
  ASSERT_GE(last, 0);
  int found = -2;
  std::thread held([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;
    sched_yield();  // runs on it from here on
    CallerCpu caller_cpu;
    found = caller_cpu.of(static_cast<uint32_t>(gettid()));
    // Asked again through the open file.
    if (found == last) found = caller_cpu.of(static_cast<uint32_t>(gettid()));
  });
  held.join();
  EXPECT_EQ(found, last);
}

TEST(CallerCpuTest, NoThreadNoCpu) {
  CallerCpu caller_cpu;
  EXPECT_EQ(caller_cpu.of(0), -1);
  EXPECT_EQ(caller_cpu.of(0x7ffffffe), -1) << "above pid_max";
  EXPECT_GE(caller_cpu.of(static_cast<uint32_t>(gettid())), 0) << "a live thread after a missing one";
}

}  // namespace
}  // namespace peregrine::fs
