#include "power_cut_util.h"

#include <sys/stat.h>

#include <cstdlib>

namespace peregrine::fstest {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

RunResult mount_with_power_cut(Volume& v, const std::vector<std::string>& options, uint64_t kill_at_io) {
  const std::string dir = v.dir() + "/undo";
  ::mkdir(dir.c_str(), 0755);
  std::string spec = dir + (kill_at_io ? ",kill_at_io=" + std::to_string(kill_at_io) : "");
  ::setenv("PEREGRINE_TEST_POWER_CUT", spec.c_str(), 1);
  RunResult r = v.mount(options);
  ::unsetenv("PEREGRINE_TEST_POWER_CUT");
  return r;
}

PowerCutOutcome cut_power(const Volume& v, uint64_t seed) {
  PowerCutOutcome total;
  for (size_t i = 0; i < v.members().size(); ++i) {
    const std::string log = v.dir() + "/undo/member-" + std::to_string(i) + ".undo";
    auto out = apply_power_cut(v.members()[i], log, mix(seed + i));
    EXPECT_TRUE(static_cast<bool>(out)) << out.status().message();
    if (!out) continue;
    total.pending += out->pending;
    total.kept += out->kept;
    total.lost += out->lost;
    total.torn += out->torn;
  }
  return total;
}

}  // namespace peregrine::fstest
