// Power cuts for mount tests: a volume mounted over members that behave
// like drives with a volatile write cache (backend/volatile_cache_device.h,
// through PEREGRINE_TEST_POWER_CUT), the daemon dying by itself as a
// chosen member write or flush starts, and the cut applied to the member
// files once the daemon is gone. Also the seeds' mixer and the round
// counts the power-cut tests read from the environment.
//
// Thread rules: the calling test's thread only (mount_with_power_cut sets
// and clears an environment variable around the mount).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fs_test_util.h"
#include "peregrine/backend/volatile_cache_device.h"

namespace peregrine::fstest {

// splitmix64: seeds for rounds, cuts and contents.
uint64_t mix(uint64_t x);

// The unsigned integer in the environment variable `name`, else fallback.
uint64_t env_u64(const char* name, uint64_t fallback);

// The seed of a run of `rounds` crashes: PEREGRINE_CRASH_SEED, else from
// the clock; printed ("WHAT: N rounds, seed S (PEREGRINE_CRASH_SEED=S
// reproduces)") and recorded as the test's property `seed`.
uint64_t crash_seed(const char* what, uint64_t rounds);

// Where round `round` of `rounds` has its daemon cut its own power: as
// the volume's Nth member write or flush starts, N from 1 to max_io, or
// (one round in four) 0: only at the kill. Never in round 0's mount
// (right after mkfs it writes the volume's first checkpoint before it
// serves: a mount that dies is no round) nor in the one after the last
// round, whose unmount must be clean.
uint64_t kill_at_io_of(uint64_t seed, uint64_t round, uint64_t rounds, uint64_t max_io);

// Forks the round's worker: the child runs `body` with the write end of
// a pipe on which it acknowledges what is durable, and must not return;
// the parent gets the read end in *acks. The child's pid, or -1.
pid_t fork_with_acks(const std::function<void(int ack_fd)>& body, Fd* acks);

// After a recovery: unmounts `v` (the daemon must exit 0) and runs
// `peregrine fsck -n` on its members, which must be clean. "" or what
// went wrong.
std::string unmount_and_fsck(Volume& v);

// Mounts `v` with its members' undo logs in DIR/undo, the daemon to die as
// the volume's kill_at_io-th member write or flush starts (0: only at the
// kill).
RunResult mount_with_power_cut(Volume& v, const std::vector<std::string>& options, uint64_t kill_at_io);

// Power cuts of an offline command that writes the members itself (grow
// --add, replace: fs/power_cut_members.h). The volume's members as they
// are now are kept aside; each round puts them back, and runs `command`
// with PEREGRINE_TEST_POWER_CUT naming the undo logs' directory.
class OfflineCommandCuts {
 public:
  OfflineCommandCuts(const Volume& v, std::function<RunResult()> command);
  // Runs the command, to die as the volume's kill_at-th member write or
  // flush starts (0: a whole run).
  RunResult run(uint64_t kill_at);
  // A whole run from the members put back (which must succeed), then the
  // members put back again: how many member writes and flushes it made, to
  // spread cut points over.
  uint64_t measure_whole_run();
  // Member writes and flushes logged so far in this run.
  uint64_t logged_ios() const;
  // The members as they were when this was made.
  void put_members_back();
  // Member `index`'s undo log.
  std::string log(uint32_t index) const;

 private:
  const Volume& v_;
  std::function<RunResult()> command_;
  std::vector<std::string> pristine_;
  std::string logs_;
};

// The cut itself, member by member (the daemon is gone): every write no
// flush covered is kept, lost or torn, from `seed`. Summed over members.
PowerCutOutcome cut_power(const Volume& v, uint64_t seed);

}  // namespace peregrine::fstest
