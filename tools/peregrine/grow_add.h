// `peregrine grow --add NEW... MEMBER...`: restripes an unmounted volume
// onto more members (peregrine/volume/restripe.h), with progress and an
// ETA on stderr. Part of cmd_grow.
//
// Test hook: PEREGRINE_TEST_RESTRIPE_STOP_AFTER=K makes the process
// _exit(9) right after the K-th superblock copy of the run is written and
// synced; "written:W" right after window W's units are written (not yet
// synced); "copy:PCT" once a window ends with PCT percent of the data moved
// (its cursor written, the next window being read). Never set it
// otherwise; the command says so on stderr when it is.
//
// Thread rules: one thread.
#pragma once

#include <string>
#include <vector>

namespace peregrine::cli {

// Exit code: 0 done, 1 refused or failed.
int grow_add(const std::vector<std::string>& members, const std::vector<std::string>& new_members, bool force);

}  // namespace peregrine::cli
