// Test-only fault injection through a real mount: PEREGRINE_TEST_FAULTS in
// the daemon's environment wraps chosen members' devices in the
// FaultInjectingDevice (src/backend). Never set it in production; a daemon
// that finds it says so in its log.
//
//   PEREGRINE_TEST_FAULTS="RULE[;RULE...]"
//   RULE = member=INDEX,action=eio|enodev|hold[,while=PATH][,op=read|write|flush]
//          [,area=meta|data][,times=N]
//
// member: index in the volume (as `peregrine info` and `peregrine stats`
// number them). eio / enodev: the IO fails with EIO / ENODEV (a device
// that is gone); hold: the IO stalls until PATH is removed. while: the rule
// applies only while PATH exists (required for hold). area: only IO on the
// member's part of the metadata area (journal, checkpoints) or of the data
// area. times: how many IOs the rule hits (default 0 = every one).
//
// Thread rules: a pure function, called once at mount.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "peregrine/backend/faulty_device.h"
#include "peregrine/util/result.h"

namespace peregrine::fs {

inline constexpr const char* kTestFaultsEnv = "PEREGRINE_TEST_FAULTS";

struct MemberAreas {
  uint32_t members = 0;
  uint64_t meta_begin = 0, meta_end = 0;  // member offsets of its metadata share
  uint64_t data_end = 0;                  // member offset past its data share
};

// The rules of `spec`, each with the member it applies to; EINVAL with the
// offending rule named on a bad spec.
Expected<std::vector<std::pair<uint32_t, FaultRule>>> parse_test_faults(const std::string& spec,
                                                                        const MemberAreas& areas);

}  // namespace peregrine::fs
