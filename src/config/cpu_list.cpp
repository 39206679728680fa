// CPU list parsing: "auto" | "none" | "N[-M][,N[-M]]...".
#include "peregrine/config/cpu_list.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>

namespace peregrine::config {

namespace {

Status bad(std::string_view text, std::string_view why) {
  return Status::error(EINVAL, "bad CPU list \"" + std::string(text) + "\": " + std::string(why));
}

// Parses one CPU number at the front of `s` and drops it from `s`.
bool take_cpu(std::string_view& s, unsigned& cpu) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), cpu);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

}  // namespace

std::string CpuAffinity::to_string() const {
  if (mode == Mode::kAuto) return "auto";
  if (mode == Mode::kNone) return "none";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Expected<CpuAffinity> parse_cpu_affinity(std::string_view text) {
  CpuAffinity a;
  if (text == "auto") return a;
  if (text == "none") {
    a.mode = CpuAffinity::Mode::kNone;
    return a;
  }
  a.mode = CpuAffinity::Mode::kList;
  if (text.empty()) return bad(text, "empty; use \"auto\", \"none\" or CPU numbers like \"0,2-3\"");
  std::string_view rest = text;
  while (true) {
    unsigned first = 0;
    if (!take_cpu(rest, first)) return bad(text, "expected \"auto\", \"none\" or CPU numbers like \"0,2-3\"");
    unsigned last = first;
    if (!rest.empty() && rest.front() == '-') {
      rest.remove_prefix(1);
      if (!take_cpu(rest, last)) return bad(text, "a range needs an end, as in \"2-3\"");
      if (last < first)
        return bad(text, "range " + std::to_string(first) + "-" + std::to_string(last) + " runs backwards");
    }
    if (last > kMaxCpu) return bad(text, "CPU " + std::to_string(last) + " is above " + std::to_string(kMaxCpu));
    for (unsigned c = first; c <= last; ++c) a.cpus.push_back(c);
    if (rest.empty()) break;
    if (rest.front() != ',') return bad(text, "unexpected '" + std::string(1, rest.front()) + "'");
    rest.remove_prefix(1);
  }
  std::sort(a.cpus.begin(), a.cpus.end());
  a.cpus.erase(std::unique(a.cpus.begin(), a.cpus.end()), a.cpus.end());
  return a;
}

Status check_cpus_usable(const CpuAffinity& a, std::string_view key, const std::vector<unsigned>& online,
                         const std::vector<unsigned>& allowed) {
  if (a.mode != CpuAffinity::Mode::kList) return Status::ok();
  auto list = [](const std::vector<unsigned>& cpus) {
    CpuAffinity l{CpuAffinity::Mode::kList, cpus};
    return cpus.empty() ? std::string("none") : l.to_string();
  };
  auto has = [](const std::vector<unsigned>& set, unsigned c) {
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  const std::string named = std::string(key) + " = " + a.to_string();
  for (unsigned c : a.cpus) {
    if (!online.empty() && !has(online, c))
      return Status::error(EINVAL, named + ": this machine has no CPU " + std::to_string(c) + " online (CPUs online: " +
                                       list(online) + "; this process may run on " + list(allowed) + ")");
    if (!has(allowed, c))
      return Status::error(EINVAL, named + ": this process may not run on CPU " + std::to_string(c) +
                                       " (it may run on " + list(allowed) +
                                       "; see taskset, cgroup cpusets or systemd's CPUAffinity=)");
  }
  return Status::ok();
}

Status check_cpus_usable(const CpuAffinity& a, std::string_view key) {
  if (a.mode != CpuAffinity::Mode::kList) return Status::ok();
  // The online list uses the CPU list syntax; without sysfs, the affinity
  // mask alone decides.
  std::vector<unsigned> online;
  std::string text;
  if (std::ifstream f("/sys/devices/system/cpu/online"); f && std::getline(f, text)) {
    if (auto parsed = parse_cpu_affinity(text); parsed && parsed->mode == CpuAffinity::Mode::kList)
      online = parsed->cpus;
  }
  std::vector<unsigned> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return Status::ok();  // nothing to judge by
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) allowed.push_back(c);
  return check_cpus_usable(a, key, online, allowed);
}

}  // namespace peregrine::config
