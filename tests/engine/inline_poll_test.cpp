// Inline polling (EngineConfig::inline_poll_ns): a submitter that served a
// lone request inline and set a PollStop reaps the member's completion
// itself, on a member with latency (shaped); without a PollStop, or when
// the stop says it has other work, it leaves every completion to the
// drive thread. Data is right either way.
#include <atomic>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

constexpr uint32_t kUnit = 4096;

bool never(const void*) { return false; }
bool always(const void*) { return true; }

uint64_t polled(Engine& e) {
  uint64_t n = 0;
  for (uint32_t d = 0; d < e.drive_count(); ++d) n += e.stats(d).polled;
  return n;
}

class InlinePoll : public EngineFixture {
 protected:
  // One member of 200 us; a budget far above it, so that a poll that
  // runs at all sees the IO finish.
  void start_shaped(uint64_t poll_ns) {
    make_members(1, 1 << 20);
    std::vector<DriveSpec> drives = specs(8);
    ShapeParams shape;
    shape.latency_ns = 200 * 1000ull;
    shape.queue_depth = 4;
    layers_[0].shape = shape;
    EngineConfig c;
    c.inline_poll_ns = poll_ns;
    start(c, kUnit, std::move(drives));
  }

  // One request, completed here (as a FUSE thread between requests does).
  static int lone_io(Submitter& sub, Request& r) {
    Waiter w;
    w.arm(r);
    if (int rc = sub.add(r); rc != 0) return rc;
    sub.unplug(Submitter::Completions::here);
    w.wait();
    return w.result.load();
  }

  // Lone writes then reads through `sub`, each checked byte for byte.
  void round_trips(Submitter& sub, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      AlignedBuffer out(kUnit), in(kUnit);
      fill(out, 11 + i);
      Request w = request_for(IoOp::write, uint64_t{kUnit} * i, out);
      ASSERT_EQ(lone_io(sub, w), 0);
      Request r = request_for(IoOp::read, uint64_t{kUnit} * i, in);
      ASSERT_EQ(lone_io(sub, r), 0);
      ASSERT_EQ(std::memcmp(in.data(), out.data(), kUnit), 0) << "block " << i;
    }
  }
};

TEST_F(InlinePoll, SubmitterWithAPollStopReapsLoneIoItself) {
  start_shaped(50 * 1000 * 1000ull);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  (*sub)->set_poll_stop(&never, nullptr);
  const int rounds = 20;
  round_trips(**sub, rounds);
  DriveStats s = wait_stats(0, [&](const DriveStats& s) { return s.ios == 2 * rounds && s.in_flight == 0; });
  // As with inline dispatch itself, a submitter that finds the drive
  // thread finishing its previous round hands off instead: count over
  // many requests rather than expect each one.
  EXPECT_GT(s.inline_batches, 0u);
  EXPECT_GT(s.polled, 0u) << "no lone IO was reaped by its submitter";
  EXPECT_LE(s.polled, s.ios);
}

TEST_F(InlinePoll, NoPollStopLeavesCompletionsToTheDriveThread) {
  start_shaped(50 * 1000 * 1000ull);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  round_trips(**sub, 10);
  wait_stats(0, [](const DriveStats& s) { return s.ios == 20 && s.in_flight == 0; });
  EXPECT_EQ(polled(*engine_), 0u);
}

TEST_F(InlinePoll, StopThatSaysOtherWorkWaitsEndsThePollAtOnce) {
  start_shaped(50 * 1000 * 1000ull);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  (*sub)->set_poll_stop(&always, nullptr);
  round_trips(**sub, 10);
  wait_stats(0, [](const DriveStats& s) { return s.ios == 20 && s.in_flight == 0; });
  EXPECT_EQ(polled(*engine_), 0u);
}

TEST_F(InlinePoll, ZeroBudgetNeverPolls) {
  start_shaped(0);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  (*sub)->set_poll_stop(&never, nullptr);
  round_trips(**sub, 10);
  wait_stats(0, [](const DriveStats& s) { return s.ios == 20 && s.in_flight == 0; });
  EXPECT_EQ(polled(*engine_), 0u);
}

}  // namespace
}  // namespace peregrine::testing
