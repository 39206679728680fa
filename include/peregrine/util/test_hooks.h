// The environment variables through which the tests and the benchmarks
// reach inside a daemon or a command: injected member faults, power cuts,
// members shaped like a given SSD, stops in the middle of an online
// change, a planted bug, the log's socket, the kernel's io_uring switch.
// Every such variable is read through test_hook(), which reads it only in
// a build made with PEREGRINE_TEST_HOOKS (the CMake option of the same
// name: on for builds from the source tree, where the tests run; off in
// the Debian package), so an installed peregrine never lets its
// environment inject faults or drop writes.
//
// Thread rules: reads the environment (getenv); call where no thread is
// changing it, as the daemon and the commands do.
#pragma once

#include <cstdlib>

namespace peregrine {

#ifdef PEREGRINE_TEST_HOOKS
inline constexpr bool kTestHooksBuilt = true;
#else
inline constexpr bool kTestHooksBuilt = false;
#endif

// The variable's value in a build with the hooks; nullptr otherwise, or
// when it is not set.
inline const char* test_hook(const char* name) { return kTestHooksBuilt ? std::getenv(name) : nullptr; }

}  // namespace peregrine
