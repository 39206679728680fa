// Drive threads: how many serve a volume (EngineConfig::drive_threads and
// the placement of drives on CPUs), seen from outside as the process's
// pg-drive-N threads, and that every drive of a shared thread gets its IO
// through — including shaped members, whose modelled completions are
// timers that the thread must take from all its drives, not just one.
#include <set>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

// Names of this process's drive threads ("pg-drive-<first drive>").
std::set<std::string> drive_threads() {
  std::set<std::string> names;
  for (const auto& [tid, name] : process_threads())
    if (name.rfind("pg-drive-", 0) == 0) names.insert(name);
  return names;
}

class DriveThreads : public EngineFixture {
 protected:
  std::set<std::string> threads_for(EngineConfig c) {
    start(c, 4096, specs());
    std::set<std::string> names = drive_threads();
    engine_.reset();
    return names;
  }
};

TEST_F(DriveThreads, AskedCountServesDrivesRoundRobin) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.drive_threads = 1;
  EXPECT_EQ(threads_for(c), (std::set<std::string>{"pg-drive-0"}));
  c.drive_threads = 2;
  EXPECT_EQ(threads_for(c), (std::set<std::string>{"pg-drive-0", "pg-drive-1"}));
  c.drive_threads = 4;
  EXPECT_EQ(threads_for(c), (std::set<std::string>{"pg-drive-0", "pg-drive-1", "pg-drive-2", "pg-drive-3"}));
  c.drive_threads = 9;  // never more threads than drives
  EXPECT_EQ(threads_for(c).size(), 4u);
}

TEST_F(DriveThreads, AutoGivesDrivesOnOneCpuOneThread) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.drive_cpus = {0, 0, 0, 0};
  EXPECT_EQ(threads_for(c), (std::set<std::string>{"pg-drive-0"}));
  // Drives 0 and 2 on one CPU, 1 and 3 on the other (CPU 0 only if that
  // is all this machine has: pinning is a hint and the plan is the same).
  c.drive_cpus = {0, 1, 0, 1};
  EXPECT_EQ(threads_for(c), (std::set<std::string>{"pg-drive-0", "pg-drive-1"}));
}

TEST_F(DriveThreads, UnpinnedAutoHasAThreadPerAllowedCpu) {
  make_members(4, 1 << 20);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  size_t cpus = static_cast<size_t>(CPU_COUNT(&set));
  EngineConfig c;
  c.pin_drive_threads = false;
  EXPECT_EQ(threads_for(c).size(), std::min<size_t>(cpus, 4));
}

// Every drive on one thread, each a shaped member holding completions for
// a different time: the thread must sleep only until the earliest of them.
// (Missing one drive's deadline would hang here, not fail.)
TEST_F(DriveThreads, OneThreadServesShapedDrivesWithDifferentLatencies) {
  const uint32_t unit = 4096;
  make_members(4, 1 << 20);
  std::vector<DriveSpec> drives = specs(8);
  for (uint32_t i = 0; i < drives.size(); ++i) {
    ShapeParams shape;
    shape.latency_ns = (50 + 400 * i) * 1000ull;
    shape.queue_depth = 4;
    layers_[i].shape = shape;
  }
  EngineConfig c;
  c.drive_threads = 1;
  start(c, unit, std::move(drives));
  uint64_t vol = engine_->map().volume_size();
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  const int kWrites = 64;
  std::vector<AlignedBuffer> bufs;
  std::vector<Request> reqs(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    bufs.emplace_back(unit);
    fill(bufs.back(), i + 1);
    reqs[i].op = IoOp::write;
    reqs[i].offset = (static_cast<uint64_t>(i) * 3 * unit) % vol;
    reqs[i].length = unit;
    reqs[i].buffer = bufs.back().data();
  }
  ASSERT_EQ(run_batch(**sub, reqs), 0);
  for (int i = 0; i < kWrites; ++i) {
    AlignedBuffer in(unit);
    ASSERT_EQ(io(IoOp::read, reqs[i].offset, in), 0);
    ASSERT_EQ(std::memcmp(in.data(), bufs[i].data(), unit), 0) << "write " << i;
  }
  for (uint32_t d = 0; d < 4; ++d) EXPECT_GT(engine_->stats(d).ios, 0u) << "drive " << d;
}

}  // namespace
}  // namespace peregrine::testing
