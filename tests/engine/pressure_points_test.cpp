// Pressure points: a submitter that would add to a drive at its high
// pressure point blocks, and is released once the drive falls below the
// low one. Completions are held by a gate, so the test decides when the
// drive drains.
#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

TEST_F(EngineFixture, SubmitterBlocksAtHighAndResumesBelowLow) {
  make_members(1, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  c.pressure_high = 4;
  c.pressure_low = 2;
  c.high_watermark = 1;  // every sub-IO is its own batch
  c.low_watermark = 1;
  // The producer says, before it blocks, that it is about to (the FUSE
  // layer hands on its read turn there).
  static thread_local bool on_producer = false;
  std::atomic<int> producer_blocks{0};
  std::atomic<int> other_blocks{0};
  c.before_submitter_blocks = [&] { (on_producer ? producer_blocks : other_blocks).fetch_add(1); };
  auto gate = std::make_shared<GatedDevice::Gate>();
  gate->open.store(false);
  auto drives = specs(/*queue_depth=*/1);
  layers_[0].wrap = [gate](std::unique_ptr<DeviceQueue> d) {
    return std::make_unique<GatedDevice>(std::move(d), gate);
  };
  start(c, 4096, std::move(drives));

  const int n = 8;
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < n; ++i) bufs.emplace_back(4096);
  std::vector<Request> reqs(n);
  std::vector<Waiter> w(n);
  std::atomic<int> submitted{0};
  std::thread producer([&] {
    on_producer = true;
    auto sub = engine_->open_submitter();
    for (int i = 0; i < n; ++i) {
      reqs[i].op = IoOp::read;
      reqs[i].offset = static_cast<uint64_t>(i) * 8192;
      reqs[i].length = 4096;
      reqs[i].buffer = bufs[i].data();
      w[i].arm(reqs[i]);
      ASSERT_EQ((*sub)->submit(reqs[i]), 0);
      submitted.store(i + 1);
    }
  });
  // One IO holds the only tag; the rest queue up. Once 4 are queued the
  // drive is at its high pressure point and the next submission blocks.
  // (Whether the first IO had left the queue when the 5th came depends on
  // the drive thread's timing, so 4 or 5 submissions get through.)
  wait_stats(0, [](const DriveStats& s) { return s.pressure_waits == 1; });
  // With the gate shut nothing completes, so the queue can only shrink by
  // the one IO that takes the tag: never below the low pressure point.
  wait_stats(0, [&](const DriveStats& s) { return s.in_flight == 1; });
  int through = submitted.load();
  EXPECT_GE(through, 4);
  EXPECT_LE(through, 5);
  EXPECT_GE(engine_->stats(0).queued, c.pressure_low) << "drive fell below the low point with nothing completing";
  EXPECT_EQ(gate->started.load(), 1u);
  EXPECT_EQ(submitted.load(), through) << "the producer got past a drive at its high pressure point";
  EXPECT_EQ(producer_blocks.load(), 1) << "the producer blocked without saying so first";
  EXPECT_EQ(other_blocks.load(), 0);
  gate->set_open(true);
  producer.join();
  for (auto& x : w) {
    x.wait();
    EXPECT_EQ(x.result.load(), 0);
  }
  EXPECT_EQ(submitted.load(), n);
  EXPECT_GE(engine_->stats(0).pressure_waits, 1u);
}

}  // namespace
}  // namespace peregrine::testing
