#include "cpu_placement.h"

#include <numa.h>
#include <sched.h>

#include <algorithm>
#include <map>

namespace peregrine {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

namespace {

std::vector<int> node_cpus(int node, const std::vector<int>& allowed) {
  std::vector<int> cpus;
  if (node < 0 || numa_available() < 0) return cpus;
  bitmask* mask = numa_allocate_cpumask();
  if (numa_node_to_cpus(node, mask) == 0) {
    for (int c : allowed) {
      if (numa_bitmask_isbitset(mask, static_cast<unsigned>(c))) cpus.push_back(c);
    }
  }
  numa_free_cpumask(mask);
  return cpus;
}

}  // namespace

std::vector<int> place_drive_threads(const std::vector<int>& numa_nodes, const std::vector<int>& explicit_cpus,
                                     const std::vector<int>& all) {
  std::vector<int> placement(numa_nodes.size(), -1);
  if (!explicit_cpus.empty()) {
    for (size_t i = 0; i < placement.size(); ++i) placement[i] = explicit_cpus[i % explicit_cpus.size()];
    return placement;
  }
  if (all.empty()) return placement;
  std::map<int, size_t> next_in_node;
  size_t next_any = 0;
  for (size_t i = 0; i < numa_nodes.size(); ++i) {
    std::vector<int> local = node_cpus(numa_nodes[i], all);
    if (!local.empty()) {
      size_t& k = next_in_node[numa_nodes[i]];
      placement[i] = local[k++ % local.size()];
    } else {
      placement[i] = all[next_any++ % all.size()];
    }
  }
  return placement;
}

}  // namespace peregrine

namespace peregrine {

std::vector<DriveThreadPlan> plan_drive_threads(const std::vector<int>& drive_cpus, uint32_t threads,
                                                uint32_t allowed) {
  std::vector<DriveThreadPlan> plan;
  uint32_t n = static_cast<uint32_t>(drive_cpus.size());
  bool pinned = std::all_of(drive_cpus.begin(), drive_cpus.end(), [](int c) { return c >= 0; });
  if (threads == 0 && pinned) {
    std::map<int, size_t> by_cpu;
    for (uint32_t i = 0; i < n; ++i) {
      auto [it, fresh] = by_cpu.emplace(drive_cpus[i], plan.size());
      if (fresh) plan.push_back(DriveThreadPlan{drive_cpus[i], {}});
      plan[it->second].drives.push_back(i);
    }
    return plan;
  }
  if (threads == 0) threads = std::max<uint32_t>(1, allowed);
  threads = std::min(threads, n);
  plan.resize(threads);
  for (uint32_t i = 0; i < n; ++i) {
    DriveThreadPlan& t = plan[i % threads];
    if (t.drives.empty()) t.cpu = drive_cpus[i];
    t.drives.push_back(i);
  }
  return plan;
}

}  // namespace peregrine
