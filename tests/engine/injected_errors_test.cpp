// Injected errors reach exactly the affected requests: a failing byte range
// on one drive fails the requests that touch it, with that errno, and no
// others; the engine keeps serving afterwards.
#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

TEST_F(EngineFixture, FailingRangeFailsOnlyRequestsThatTouchIt) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.high_watermark = 256;
  auto drives = specs();
  FaultRule bad;
  bad.action = FaultRule::Action::fail;
  bad.errnum = EIO;
  bad.range_begin = 8 * 4096;  // member 1's rows 8 and 9
  bad.range_end = 10 * 4096;
  bad.op = IoOp::read;
  bad.times = 0;  // every time
  layers_[1].faults = FaultPlan{{bad}};
  start(c, 4096, std::move(drives));
  // Write the whole first 256 KiB, then read it back as 64 single-unit
  // requests in one batch.
  AlignedBuffer all(64 * 4096);
  fill(all, 21);
  ASSERT_EQ(io(IoOp::write, 0, all), 0);
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < 64; ++i) bufs.emplace_back(4096);
  std::vector<Request> reqs(64);
  std::vector<Waiter> w(64);
  auto sub = engine_->open_submitter();
  for (int i = 0; i < 64; ++i) {
    reqs[i].op = IoOp::read;
    reqs[i].offset = static_cast<uint64_t>(i) * 4096;
    reqs[i].length = 4096;
    reqs[i].buffer = bufs[i].data();
    w[i].arm(reqs[i]);
    ASSERT_EQ((*sub)->add(reqs[i]), 0);
  }
  (*sub)->unplug();
  for (int i = 0; i < 64; ++i) {
    w[i].wait();
    // Unit u is on member u mod 4, row u div 4: member 1, rows 8-9 are
    // units 33 and 37.
    bool hit = (i % 4 == 1) && (i / 4 == 8 || i / 4 == 9);
    if (hit) {
      EXPECT_EQ(w[i].result.load(), -EIO) << "unit " << i;
    } else {
      EXPECT_EQ(w[i].result.load(), 0) << "unit " << i;
      EXPECT_EQ(std::memcmp(bufs[i].data(), all.data() + i * 4096, 4096), 0) << "unit " << i;
    }
  }
  // Still serving: a read elsewhere on the same drive works.
  AlignedBuffer again(4096);
  ASSERT_EQ(io(IoOp::read, 5 * 4096, again), 0);
  EXPECT_EQ(std::memcmp(again.data(), all.data() + 5 * 4096, 4096), 0);
}

TEST_F(EngineFixture, NthIoFailureFailsThatRequestAlone) {
  make_members(1, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  auto drives = specs();
  FaultRule third;
  third.nth = 3;
  third.errnum = ENOSPC;
  layers_[0].faults = FaultPlan{{third}};
  start(c, 4096, std::move(drives));
  AlignedBuffer b(4096);
  EXPECT_EQ(io(IoOp::write, 0, b), 0);
  EXPECT_EQ(io(IoOp::write, 4096, b), 0);
  EXPECT_EQ(io(IoOp::write, 8192, b), -ENOSPC);
  EXPECT_EQ(io(IoOp::write, 12288, b), 0);
}

}  // namespace
}  // namespace peregrine::testing
