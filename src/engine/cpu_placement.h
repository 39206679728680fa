// Chooses the CPU each drive thread is pinned to. Called once, by
// Engine::create, on the creating thread.
#pragma once

#include <vector>

namespace peregrine {

// For each drive (given its NUMA node, -1 = unknown), a CPU from the
// process's allowed set: drives of a known node go round-robin over that
// node's allowed CPUs, the rest round-robin over all allowed CPUs.
// `explicit_cpus`, when not empty, is used as given (cycled if shorter).
std::vector<int> place_drive_threads(const std::vector<int>& numa_nodes, const std::vector<int>& explicit_cpus);

}  // namespace peregrine
