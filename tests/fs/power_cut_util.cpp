#include "power_cut_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

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

uint64_t crash_seed(const char* what, uint64_t rounds) {
  const uint64_t seed =
      env_u64("PEREGRINE_CRASH_SEED",
              static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007);
  std::printf("%s: %llu rounds, seed %llu (PEREGRINE_CRASH_SEED=%llu reproduces)\n", what,
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

uint64_t kill_at_io_of(uint64_t seed, uint64_t round, uint64_t rounds, uint64_t max_io) {
  std::mt19937_64 r(mix(seed * 7919 + round));
  return round == 0 || round >= rounds || r() % 4 == 0 ? 0 : 1 + r() % max_io;
}

pid_t fork_with_acks(const std::function<void(int ack_fd)>& body, Fd* acks) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    body(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  if (child < 0) {
    ::close(fds[0]);
    return -1;
  }
  *acks = Fd(fds[0]);
  return child;
}

std::string unmount_and_fsck(Volume& v) {
  const int st = v.unmount();
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "unmount: daemon wait status " + std::to_string(st);
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), v.members().begin(), v.members().end());
  RunResult f = run(argv);
  v.wait_members_released();
  return f.code == 0 ? "" : "fsck -n after recovery: " + f.describe();
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

namespace {

void copy_member_files(const std::vector<std::string>& from, const std::vector<std::string>& to) {
  for (size_t i = 0; i < from.size(); ++i) {
    RunResult r = run({"cp", "--sparse=always", from[i], to[i]});
    ASSERT_EQ(r.code, 0) << r.describe();
  }
}

}  // namespace

OfflineCommandCuts::OfflineCommandCuts(const Volume& v, std::function<RunResult()> command)
    : v_(v), command_(std::move(command)), logs_(v.dir() + "/undo") {
  for (size_t i = 0; i < v.members().size(); ++i) pristine_.push_back(v.dir() + "/pristine" + std::to_string(i));
  copy_member_files(v.members(), pristine_);
  EXPECT_EQ(::mkdir(logs_.c_str(), 0755), 0);
}

RunResult OfflineCommandCuts::run(uint64_t kill_at) {
  const std::string spec = logs_ + (kill_at ? ",kill_at_io=" + std::to_string(kill_at) : "");
  ::setenv("PEREGRINE_TEST_POWER_CUT", spec.c_str(), 1);
  RunResult r = command_();
  ::unsetenv("PEREGRINE_TEST_POWER_CUT");
  return r;
}

void OfflineCommandCuts::put_members_back() { copy_member_files(pristine_, v_.members()); }

std::string OfflineCommandCuts::log(uint32_t index) const {
  return logs_ + "/member-" + std::to_string(index) + ".undo";
}

uint64_t OfflineCommandCuts::measure_whole_run() {
  // From the copies, as every round starts: `cp --sparse=always` makes runs
  // of zeros holes (mkfs writes a file member's journal share), and a
  // command copying the members skips holes, so it does fewer IOs there.
  put_members_back();
  RunResult whole = run(0);
  EXPECT_EQ(whole.code, 0) << whole.describe();
  put_members_back();
  return logged_ios();
}

uint64_t OfflineCommandCuts::logged_ios() const {
  uint64_t ios = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(logs_, ec)) {
    Fd fd(::open(e.path().c_str(), O_RDONLY));
    UndoRecord r;
    while (::read(fd.get(), &r, sizeof r) == static_cast<ssize_t>(sizeof r)) {
      if (r.kind == UndoRecord::write) ::lseek(fd.get(), static_cast<off_t>(r.length), SEEK_CUR);
      if (r.kind != UndoRecord::completed) ++ios;  // a write started, or a flush
    }
  }
  return ios;
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
