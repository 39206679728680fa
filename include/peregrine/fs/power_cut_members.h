// Tests only: the power-cut layer (backend/volatile_cache_device.h) over
// the members of an offline command that writes them itself (grow --add),
// as PEREGRINE_TEST_POWER_CUT="DIR[,kill_at_io=N]" puts it over a mounted
// volume's members (src/fs/test_faults.h): member I's writes and flushes
// are logged to DIR/member-I.undo for apply_power_cut(), and with
// kill_at_io the process kills itself as the Nth member write or flush
// (counted over every member) starts.
//
// Thread rules: the hook is called on one thread, before the command
// writes; the layers it makes are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"

namespace peregrine::fs {

using MemberHook = std::function<Status(MemberFile& member, uint32_t index)>;

// The hook that routes a member's writes through the layer
// (MemberFile::route_writes_through), or an empty function when the
// variable is not set; EINVAL naming the variable on a bad value. When it
// is set, `note` is told so ("TEST ONLY: ...") for the user.
Expected<MemberHook> power_cut_hook_from_env(const std::function<void(const std::string&)>& note);

}  // namespace peregrine::fs
