// Loop devices over files, for tests that need real block devices (root and
// losetup). Every test directory's tests can include it (tests/CMakeLists.txt
// puts tests/common on their include path). Single-threaded test code.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace peregrine::test {

// The loop device now backed by `file` ("/dev/loopN"), or "" when none could
// be attached (then the test skips).
inline std::string attach_loop_device(const std::string& file) {
  std::string cmd = "losetup -f --show " + file + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  char buf[256] = {};
  bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  if (!got) return {};
  std::string dev = buf;
  while (!dev.empty() && dev.back() == '\n') dev.pop_back();
  return dev;
}

// Detaches each device (a failure is left to losetup's own silence: the
// test is over).
inline void detach_loop_devices(const std::vector<std::string>& devices) {
  for (const std::string& d : devices) std::system(("losetup -d " + d + " 2>/dev/null").c_str());
}

}  // namespace peregrine::test
