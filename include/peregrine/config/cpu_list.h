// CPU affinity as written in the config file: "auto", "none" or a Linux CPU
// list such as "0,2-3" (the syntax of taskset -c and /sys/.../cpulist).
//
// Thread rules: plain values; parse on the main thread, read anywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::config {

// Highest CPU number accepted: glibc's cpu_set_t holds CPU_SETSIZE = 1024.
inline constexpr unsigned kMaxCpu = 1023;

struct CpuAffinity {
  enum class Mode {
    kAuto,  // spread threads over the CPUs, NUMA node of the drive first
    kNone,  // do not pin: the kernel scheduler places the threads
    kList,  // pin threads round-robin over `cpus`
  };
  Mode mode = Mode::kAuto;
  std::vector<unsigned> cpus;  // sorted, unique; only for kList

  // Canonical text: "auto", "none" or ranges ("0,2-3"); parses back equal.
  std::string to_string() const;
  bool operator==(const CpuAffinity&) const = default;
};

// Parses "auto", "none" or a CPU list; errors say what is wrong with the
// text (the caller adds where it came from).
Expected<CpuAffinity> parse_cpu_affinity(std::string_view text);

// Refuses a CPU list that names a CPU this process cannot run on: one not
// online (/sys/devices/system/cpu/online) or outside its affinity mask
// (sched_getaffinity: taskset, cgroup cpusets, systemd CPUAffinity=). The
// message names `key`, the CPU and what the machine has. "auto" and "none"
// always pass. The second form takes the two sets, for tests.
Status check_cpus_usable(const CpuAffinity& a, std::string_view key);
Status check_cpus_usable(const CpuAffinity& a, std::string_view key, const std::vector<unsigned>& online,
                         const std::vector<unsigned>& allowed);

}  // namespace peregrine::config
