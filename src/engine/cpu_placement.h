// Chooses the CPU each drive is served on, and which drives share a drive
// thread.
// Thread rules: any thread; allowed_cpus() reads the calling thread's CPU
// affinity, the rest is pure.
#pragma once

#include <cstdint>
#include <vector>

namespace peregrine {

// For each drive (given its NUMA node, -1 = unknown), a CPU from
// `allowed` (the CPUs the mounting thread may run on: Engine::create's,
// also for a drive added later by a thread pinned elsewhere): drives of a
// known node go round-robin over that node's allowed CPUs, the rest
// round-robin over all allowed CPUs. `explicit_cpus`, when not empty, is
// used as given (cycled if shorter).
std::vector<int> place_drive_threads(const std::vector<int>& numa_nodes, const std::vector<int>& explicit_cpus,
                                     const std::vector<int>& allowed);
// The CPUs the calling thread may run on.
std::vector<int> allowed_cpus();

}  // namespace peregrine

namespace peregrine {

struct DriveThreadPlan {
  int cpu = -1;                  // -1 = not pinned
  std::vector<uint32_t> drives;  // indices, ascending
};

// Which drives each thread serves, given each drive's CPU (-1 = unpinned)
// and the number of threads asked for (0 = auto). Auto: drives on the same
// CPU share a thread; unpinned drives get min(drives, `allowed_cpus`)
// threads (at least 1). Otherwise drive i goes to thread i % threads,
// pinned to the CPU of its first drive.
std::vector<DriveThreadPlan> plan_drive_threads(const std::vector<int>& drive_cpus, uint32_t threads,
                                                uint32_t allowed_cpus);

}  // namespace peregrine
