// Writes the drive may hold (Request::may_hold: writes the daemon answered
// before their IO) wait on their drive for neighbours
// (EngineConfig::hold_writes_ns) and go out merged: when a thread asks
// for them (Engine::dispatch_held), when another request reaches the
// drive, when the hold ends, when the engine stops. Other writes are
// never held.
#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

constexpr uint64_t kLongHoldNs = 600'000'000'000ull;  // longer than any test: only the event under test ends it

class HoldWrites : public EngineFixture {
 protected:
  static constexpr uint32_t kWrites = 8;

  void TearDown() override {
    sub_.reset();  // before the engine
    EngineFixture::TearDown();
  }

  void start_one_drive(uint64_t hold_ns, uint32_t max_io_bytes = 1 << 20, std::optional<FaultPlan> faults = {}) {
    make_members(1, 4 << 20);
    if (faults) layers_[0].faults = *faults;
    EngineConfig c;
    c.inline_dispatch = false;
    c.hold_writes_ns = hold_ns;
    c.max_io_bytes = max_io_bytes;
    start(c, 4096, specs());
  }

  DriveStats idle_stats() {
    return wait_stats(0, [](const DriveStats& s) { return s.in_flight == 0 && s.queued == 0; });
  }

  // kWrites neighbouring 4 KiB writes from offset 0, each handed on alone
  // (its own unplug) through one submitter, as one write per unpacked file
  // is.
  void write_one_by_one(bool may_hold) {
    auto sub = engine_->open_submitter();
    ASSERT_TRUE(sub);
    sub_ = std::move(*sub);
    for (uint32_t i = 0; i < kWrites; ++i) {
      bufs_[i] = std::make_unique<AlignedBuffer>(4096);
      fill(*bufs_[i], static_cast<uint8_t>(i + 1));
      reqs_[i].op = IoOp::write;
      reqs_[i].offset = uint64_t{i} * 4096;
      reqs_[i].length = 4096;
      reqs_[i].buffer = bufs_[i]->data();
      reqs_[i].awaited = false;
      reqs_[i].may_hold = may_hold;
      waiters_[i].arm(reqs_[i]);
      ASSERT_EQ(sub_->add(reqs_[i]), 0);
      sub_->unplug();
      // The first is in the backlog before the others arrive: they must
      // join a write the drive holds already, not only each other.
      if (i == 0 && may_hold) wait_stats(0, [](const DriveStats& s) { return s.subios >= 1; });
    }
  }

  uint32_t completed() const {
    uint32_t n = 0;
    for (const Waiter& w : waiters_) n += w.done.load();
    return n;
  }

  // Waits until every write completed, whatever its result. The 30 s
  // guard only turns a write held for ever (the hold in these tests is
  // longer than any run) into a failure instead of a hang.
  void wait_completed() {
    const uint64_t deadline = monotonic_ns() + 30'000'000'000ull;
    while (completed() < kWrites && monotonic_ns() < deadline) std::this_thread::yield();
    ASSERT_EQ(completed(), kWrites) << "held writes never went out";
  }

  void wait_all() {
    wait_completed();
    for (const Waiter& w : waiters_) EXPECT_EQ(w.result.load(), 0);
  }

  void wait_all_and_check_data() {
    wait_all();
    AlignedBuffer back(uint64_t{kWrites} * 4096);
    ASSERT_EQ(io(IoOp::read, 0, back), 0);
    for (uint32_t i = 0; i < kWrites; ++i)
      EXPECT_EQ(std::memcmp(back.data() + uint64_t{i} * 4096, bufs_[i]->data(), 4096), 0) << "write " << i;
  }

  static void fill(AlignedBuffer& b, uint8_t v) { std::memset(b.data(), v, b.size()); }

  Request reqs_[kWrites];
  Waiter waiters_[kWrites];
  std::unique_ptr<AlignedBuffer> bufs_[kWrites];
  std::unique_ptr<Submitter> sub_;
};

TEST_F(HoldWrites, HeldWritesGoOutAsOneIoWhenAThreadAsksForThem) {
  start_one_drive(kLongHoldNs);
  // Every write is on the drive once add() and unplug() return (in an
  // inbox or the backlog): none may be done before the call below.
  write_one_by_one(true);
  EXPECT_EQ(completed(), 0u) << "the drive sent writes it should hold";
  engine_->dispatch_held();
  wait_all();
  DriveStats s = wait_stats(0, [](const DriveStats& s) { return s.in_flight == 0; });
  EXPECT_EQ(s.write_ios, 1u) << "the held writes should go out merged";
  EXPECT_EQ(s.merged, kWrites - 1);
  wait_all_and_check_data();
}

TEST_F(HoldWrites, AnotherRequestTakesTheHeldWritesWithIt) {
  start_one_drive(kLongHoldNs);
  write_one_by_one(true);
  EXPECT_EQ(completed(), 0u) << "the drive sent writes it should hold";
  AlignedBuffer elsewhere(4096);
  ASSERT_EQ(io(IoOp::read, 1 << 20, elsewhere), 0);
  wait_all();
  EXPECT_EQ(idle_stats().write_ios, 1u) << "the held writes should go out merged";
  wait_all_and_check_data();
}

TEST_F(HoldWrites, HeldWritesGoOutWhenTheyFillOneIo) {
  start_one_drive(kLongHoldNs, kWrites * 4096);
  write_one_by_one(true);  // the last one fills the IO: its push wakes the drive
  wait_all();
  EXPECT_EQ(idle_stats().write_ios, 1u);
  wait_all_and_check_data();
}

// The merged IO of the held writes fails on one block: each write is sent
// again alone, and none of those may be held again (nor merged back into
// the IO that failed). Only the write over the failing block fails.
TEST_F(HoldWrites, WritesSentAgainAfterTheirMergedIoFailedAreNotHeldAgain) {
  FaultRule bad;
  bad.action = FaultRule::Action::fail;
  bad.errnum = EIO;
  bad.range_begin = 3 * 4096;
  bad.range_end = 4 * 4096;
  bad.op = IoOp::write;
  bad.times = 0;  // every time
  start_one_drive(kLongHoldNs, 1 << 20, FaultPlan{{bad}});
  write_one_by_one(true);
  engine_->dispatch_held();
  wait_completed();
  for (uint32_t i = 0; i < kWrites; ++i) EXPECT_EQ(waiters_[i].result.load(), i == 3 ? -EIO : 0) << "write " << i;
  EXPECT_GE(idle_stats().retried_unmerged, 1u);
}

TEST_F(HoldWrites, HeldWritesGoOutWhenTheHoldEnds) {
  start_one_drive(1'000'000);  // 1 ms: nothing else ends it here
  write_one_by_one(true);
  wait_all();
  EXPECT_GE(idle_stats().holds, 1u);
  wait_all_and_check_data();
}

TEST_F(HoldWrites, WritesNotMarkedMayHoldAreNeverHeld) {
  start_one_drive(kLongHoldNs);
  write_one_by_one(false);
  wait_all();
  EXPECT_EQ(idle_stats().holds, 0u);
  wait_all_and_check_data();
}

TEST_F(HoldWrites, StoppingTheEngineSendsWhatItHolds) {
  start_one_drive(kLongHoldNs);
  write_one_by_one(true);
  sub_.reset();
  engine_.reset();  // waits for every IO: the held writes must go
  EXPECT_EQ(completed(), kWrites);
  for (const Waiter& w : waiters_) EXPECT_EQ(w.result.load(), 0);
}

TEST_F(HoldWrites, NoHoldSendsEachAtOnce) {
  start_one_drive(0);
  write_one_by_one(true);
  wait_all();
  EXPECT_EQ(idle_stats().holds, 0u);
  wait_all_and_check_data();
}

}  // namespace
}  // namespace peregrine::testing
