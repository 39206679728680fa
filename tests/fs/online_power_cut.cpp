// Power cuts through an online member change: see online_power_cut.h.
#include "online_power_cut.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "member_change_util.h"
#include "power_cut_util.h"

namespace peregrine::fstest {

namespace {

// Records the writer fsyncs after the online command returned.
constexpr uint64_t kRecordsAfterChange = 64;

// The record the writer puts at index i of "log".
std::string record(uint64_t i) { return pattern(4096, 1000 + i); }

// Checks "log" against `acked` fsync'd records: each one there, a record
// after them whole or zeros.
void check_log(const std::string& log, uint64_t acked, uint64_t kill_at) {
  EXPECT_GE(log.size(), acked * 4096) << "kill_at_io=" << kill_at << ": fsync'd records lost";
  for (uint64_t i = 0; i * 4096 < log.size(); ++i) {
    const std::string rec = log.substr(i * 4096, 4096);
    const bool whole = rec == record(i).substr(0, rec.size());
    const bool zeros = i >= acked && rec.find_first_not_of('\0') == std::string::npos;
    EXPECT_TRUE(whole || zeros) << "kill_at_io=" << kill_at << ": record " << i << " of " << acked
                                << " fsync'd holds other bytes";
    if (!whole && !zeros) break;
  }
}

}  // namespace

void cut_power_through_online_change(Volume& v, const OnlineChange& change, uint64_t rounds) {
  ASSERT_TRUE(write_file(v.at("big"), pattern(24 << 20, 1)));
  ASSERT_TRUE(write_file(v.at("small"), pattern(12345, 2)));
  const Tree before = snapshot_tree(v.mountpoint(), false);
  ASSERT_EQ(v.unmount(), 0);
  std::vector<std::string> logged = v.members();  // log I: logged[I]
  logged.insert(logged.end(), change.added.begin(), change.added.end());
  uint64_t after_mount = 0, after_change = 0;
  std::atomic<uint64_t> acked{0};  // records of "log" fsync'd
  // Mount, change online with the writer running, let it write some more
  // records on the changed volume, unmount; a daemon that died is reaped
  // and its mount detached (exit 137 then).
  OfflineCommandCuts cuts(v, [&]() -> RunResult {
    RunResult m = v.mount();
    if (m.code != 0) return m;
    after_mount = cuts.logged_ios();
    std::atomic<uint64_t> stop_at{~uint64_t{0}};
    acked.store(0);
    std::thread writer([&] {
      Fd fd(::open(v.at("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
      for (uint64_t i = 0; fd.ok() && i < stop_at.load(); ++i) {
        if (!write_at(fd.get(), record(i), static_cast<off_t>(i * 4096)) || ::fsync(fd.get()) != 0) break;
        acked.store(i + 1);
      }
    });
    RunResult r = change.online(v);
    if (r.code == 0) after_change = cuts.logged_ios();
    // Records fsync'd after the change reach the members it added (a
    // flush must cover them too).
    stop_at.store(r.code == 0 ? acked.load() + kRecordsAfterChange : 0);
    writer.join();
    const int status = r.code == 0 ? v.unmount() : wait_exit(v.daemon_pid());
    if (r.code != 0 || status != 0) {
      v.adopt(0);
      run({"umount", "-l", v.mountpoint()});
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) r.code = 128 + SIGKILL;
    return r;
  });
  const uint64_t total = cuts.measure_whole_run();
  const uint64_t first = after_mount + 1;
  std::printf("a whole run: %llu member writes and flushes, %llu of them mounting, %llu when the change ended, "
              "%llu records fsync'd\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(after_mount),
              static_cast<unsigned long long>(after_change), static_cast<unsigned long long>(acked.load()));
  ASSERT_GT(total, first + 10) << "a whole run made " << total << " member IOs, " << after_mount << " of them mounting";
  ASSERT_GT(total, after_change) << "no member IO after the change";
  const uint64_t seed = crash_seed(change.what.c_str(), rounds);
  for (uint64_t round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    cuts.put_members_back();
    for (const std::string& a : change.added) ::unlink(a.c_str());
    // Rounds in turn: anywhere after the mount, in the records after the
    // change, among the last 40 (the unmount, and the switch or commit's
    // end, which the copies outnumber).
    const uint64_t r = mix(seed * 7919 + round);
    const uint64_t span = total - first + 1;
    uint64_t kill_at = first + r % span;
    if (round % 3 == 1) kill_at = after_change + 1 + r % (total - after_change);
    if (round % 3 == 2) kill_at = total - r % std::min<uint64_t>(span, 40);
    RunResult cut = cuts.run(kill_at);
    // The writer makes the count vary from run to run: a run that made
    // fewer IOs than kill_at ends whole.
    ASSERT_TRUE(cut.code == 128 + SIGKILL || cut.code == 0)
        << "kill_at_io=" << kill_at << " of " << total << ": " << cut.describe();
    wait_members_released(logged);
    for (uint32_t index = 0; index < logged.size(); ++index) {
      const std::string& path = logged[index];
      if (!std::filesystem::exists(path) || !std::filesystem::exists(cuts.log(index))) continue;
      auto out = apply_power_cut(path, cuts.log(index), mix(seed + round * 31 + index));
      ASSERT_TRUE(static_cast<bool>(out)) << out.status().message();
    }
    std::vector<std::string> argv = change.offline;
    RunResult again = run(argv);
    if (again.code != 0 && contains(again.err, "--force")) {
      std::printf("kill_at_io=%llu: the offline command refused, then --force: %s",
                  static_cast<unsigned long long>(kill_at), again.err.c_str());
      argv.push_back("--force");
      again = run(argv);
    }
    ASSERT_EQ(again.code, 0) << "kill_at_io=" << kill_at << " of " << total << ": " << again.describe();
    RunResult f = fsck(change.final_members);
    EXPECT_EQ(f.code, 0) << "kill_at_io=" << kill_at << ": " << f.describe();
    ASSERT_EQ(v.mount({}, change.final_members).code, 0) << "kill_at_io=" << kill_at;
    Tree after = snapshot_tree(v.mountpoint(), false);
    after.erase("log");
    EXPECT_EQ(describe_tree_difference(before, after), "") << "kill_at_io=" << kill_at;
    check_log(read_file(v.at("log")), acked.load(), kill_at);
    ASSERT_EQ(v.unmount(), 0);
    wait_members_released(change.final_members);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace peregrine::fstest
