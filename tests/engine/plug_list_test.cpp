// Plug list classification: a submitter's batch is split at stripe-unit
// boundaries and each piece lands on the drive RAID-0 assigns it, all of a
// drive's share arriving in one hand-off (so neighbours from different
// requests of the batch merge there).
#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

TEST_F(EngineFixture, BatchIsClassifiedPerDriveAndHandedOffOncePerDrive) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  c.high_watermark = 1024;  // one batch, one unplug
  start(c, 4096, specs());
  // Units: [0,3) -> drives 0,1,2; unit 4 -> drive 0; units 7,8 -> drives 3,0.
  // Drive 0 gets units 0, 4 and 8: member rows 0, 1, 2, contiguous.
  struct Piece {
    uint64_t off, len;
  } pieces[] = {{0, 3 * 4096}, {4 * 4096, 4096}, {7 * 4096, 2 * 4096}};
  std::vector<AlignedBuffer> bufs;
  Request reqs[3];
  Waiter w[3];
  auto sub = engine_->open_submitter();
  for (int i = 0; i < 3; ++i) {
    bufs.emplace_back(pieces[i].len);
    fill(bufs.back(), 40 + i);
    reqs[i].op = IoOp::write;
    reqs[i].offset = pieces[i].off;
    reqs[i].length = pieces[i].len;
    reqs[i].buffer = bufs.back().data();
    w[i].arm(reqs[i]);
    ASSERT_EQ((*sub)->add(reqs[i]), 0);
  }
  for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(engine_->stats(d).subios, 0u) << "nothing may leave before unplug";
  (*sub)->unplug();
  for (auto& x : w) {
    x.wait();
    ASSERT_EQ(x.result.load(), 0);
  }
  uint64_t expect_subios[4] = {3, 1, 1, 1};
  for (uint32_t d = 0; d < 4; ++d) {
    DriveStats s = wait_stats(d, [&](const DriveStats& s) { return s.subios == expect_subios[d] && s.in_flight == 0; });
    EXPECT_EQ(s.subios, expect_subios[d]) << "drive " << d;
    EXPECT_EQ(s.ios, 1u) << "drive " << d << ": its share should arrive together and merge";
  }
  EXPECT_EQ(engine_->stats(0).merged, 2u);
  // Each unit sits on its member where RAID-0 puts it.
  AlignedBuffer unit(4096);
  uint64_t units[] = {0, 1, 2, 4, 7, 8};
  const std::byte* src[] = {bufs[0].data(), bufs[0].data() + 4096, bufs[0].data() + 8192,
                            bufs[1].data(), bufs[2].data(),        bufs[2].data() + 4096};
  for (int i = 0; i < 6; ++i) {
    uint32_t member = static_cast<uint32_t>(units[i] % 4);
    uint64_t member_off = (units[i] / 4) * 4096;
    ASSERT_EQ(members_[member].pread_full(unit.data(), 4096, member_off), 0);
    EXPECT_EQ(std::memcmp(unit.data(), src[i], 4096), 0) << "unit " << units[i];
  }
}

TEST_F(EngineFixture, FlushIsClassifiedToEveryWrittenDriveOnce) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  start(c, 4096, specs());
  // One 4-unit write: one unit on each drive, so each needs a flush.
  AlignedBuffer data(4 * 4096);
  ASSERT_EQ(io(IoOp::write, 0, data), 0);
  for (uint32_t d = 0; d < 4; ++d) wait_stats(d, [](const DriveStats& s) { return s.in_flight == 0; });
  Request r;
  r.op = IoOp::flush;
  Waiter w;
  w.arm(r);
  auto sub = engine_->open_submitter();
  ASSERT_EQ((*sub)->submit(r), 0);
  w.wait();
  EXPECT_EQ(w.result.load(), 0);
  for (uint32_t d = 0; d < 4; ++d) {
    DriveStats s = wait_stats(d, [](const DriveStats& s) { return s.flushes == 1 && s.in_flight == 0; });
    EXPECT_EQ(s.subios, 2u) << "drive " << d;  // its unit of the write, and the flush
    EXPECT_EQ(s.flushes, 1u) << "drive " << d;
  }
}

}  // namespace
}  // namespace peregrine::testing
