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
// PEREGRINE_TEST_POWER_CUT="DIR[,kill_at_io=N]" puts a VolatileCacheDevice
// (backend/volatile_cache_device.h) over every member: DIR/member-I.undo
// is member I's undo log, for apply_power_cut() once the daemon is dead;
// with kill_at_io the daemon kills itself as the volume's Nth member
// write or flush starts (a power cut at a reproducible point inside whatever runs).
//
// Thread rules: pure functions, called once at mount.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "peregrine/backend/faulty_device.h"
#include "peregrine/util/result.h"
#include "peregrine/util/test_hooks.h"

namespace peregrine::fs {

inline constexpr const char* kTestFaultsEnv = "PEREGRINE_TEST_FAULTS";
inline constexpr const char* kTestPowerCutEnv = "PEREGRINE_TEST_POWER_CUT";

struct TestPowerCut {
  std::string dir;
  uint64_t kill_at_io = 0;
};
// Member I's undo log under PEREGRINE_TEST_POWER_CUT's DIR.
inline std::string power_cut_log(const std::string& dir, uint32_t member) {
  return dir + "/member-" + std::to_string(member) + ".undo";
}

struct MemberAreas {
  uint32_t members = 0;
  uint64_t meta_begin = 0, meta_end = 0;  // member offsets of its metadata share
  uint64_t data_end = 0;                  // member offset past its data share
};

// The rules of `spec`, each with the member it applies to; EINVAL with the
// offending rule named on a bad spec.
Expected<std::vector<std::pair<uint32_t, FaultRule>>> parse_test_faults(const std::string& spec,
                                                                        const MemberAreas& areas);
Expected<TestPowerCut> parse_test_power_cut(const std::string& spec);

// PEREGRINE_TEST_PLANT=NAME plants a bug the power-cut harness must catch:
// journal_without_data_flush (meta::Options::plant_journal_without_data_flush),
// discard_before_free_durable (meta::Options::plant_discard_before_free_durable).
inline constexpr const char* kTestPlantEnv = "PEREGRINE_TEST_PLANT";
inline constexpr const char* kPlantJournalWithoutDataFlush = "journal_without_data_flush";
inline constexpr const char* kPlantDiscardBeforeFreeDurable = "discard_before_free_durable";
inline std::string planted_bug() {
  const char* v = test_hook(kTestPlantEnv);
  return v == nullptr ? "" : v;
}

}  // namespace peregrine::fs
