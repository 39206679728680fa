// Power cuts through an online member change (replace, grow --add): the
// change runs on a mounted volume while a writer appends fsync'd records;
// the writer goes on for some records after it; every write of the daemon
// to the members (old and new) goes through the power-cut layer; the
// daemon dies as a chosen one starts, the cut keeps,
// loses or tears every write no flush covered, and the offline command
// over the members then finishes the change. The volume must mount over
// the final members with every file of before, every fsync'd record, a
// record after them whole or zeros, and fsck clean.
//
// Thread rules: the test's thread, which also runs the writer's thread
// (joined before each round ends).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {

struct OnlineChange {
  // The seed's name in the test's output ("online replace power cuts").
  std::string what;
  // The members the change adds (created by it), logged after the
  // volume's own: member I of N added as log N + I.
  std::vector<std::string> added;
  // The command on the mounted volume (`peregrine replace ... MOUNTPOINT`).
  std::function<RunResult(const Volume&)> online;
  // The offline command over the members that finishes the change; run
  // again with --force when it refuses and says so.
  std::vector<std::string> offline;
  // The volume's members after the change.
  std::vector<std::string> final_members;
};

// `v` is mounted over its members; this writes the files that must
// survive (a 24 MiB one and a small one) and unmounts it first. The
// rounds cut in turn anywhere after the mount, among the records written
// after the change (the added members must be flushed too), and among the
// last 40 member IOs (the unmount).
void cut_power_through_online_change(Volume& v, const OnlineChange& change, uint64_t rounds);

}  // namespace peregrine::fstest
