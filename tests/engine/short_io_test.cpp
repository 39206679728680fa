// Short transfers: when the device moves only part of an IO, the engine
// sends the rest and the request still completes with all its data.
#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

TEST_F(EngineFixture, ShortWriteAndShortReadAreCompleted) {
  make_members(2, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  c.high_watermark = 1024;
  auto drives = specs();
  FaultRule shorten;
  shorten.action = FaultRule::Action::short_transfer;
  shorten.times = 2;  // the first two IOs on drive 0: the write, then the read
  layers_[0].faults = FaultPlan{{shorten}};
  start(c, 65536, std::move(drives));
  AlignedBuffer out(65536), in(65536);
  fill(out, 11);
  ASSERT_EQ(io(IoOp::write, 0, out), 0);
  ASSERT_EQ(io(IoOp::read, 0, in), 0);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
  DriveStats s = wait_stats(0, [](const DriveStats& s) { return s.short_ios == 2 && s.in_flight == 0; });
  EXPECT_EQ(s.short_ios, 2u);
  EXPECT_EQ(s.errors, 0u);
  // The data is on the member itself, not just echoed back.
  AlignedBuffer raw(65536);
  ASSERT_EQ(members_[0].pread_full(raw.data(), raw.size(), 0), 0);
  EXPECT_EQ(std::memcmp(raw.data(), out.data(), out.size()), 0);
}

}  // namespace
}  // namespace peregrine::testing
