// Plug list classification: a submitter's batch is split at stripe-unit
// boundaries and each piece lands on the drive RAID-0 assigns it, all of a
// drive's share arriving in one hand-off (so neighbours from different
// requests of the batch merge there); a batch ends at the high watermark
// in effect, also one set after the start.
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

// After an online restripe the mount sets the watermarks for the new
// drive count: batches end at the new high watermark, which stays below
// the submitters' SubIo pools.
TEST_F(EngineFixture, BatchesEndAtTheHighWatermarkSetAfterTheStart) {
  make_members(4, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  c.high_watermark = 1024;
  start(c, 4096, specs());
  engine_->set_watermarks(1, 2);
  EXPECT_EQ(engine_->low_watermark(), 1u);
  EXPECT_EQ(engine_->high_watermark(), 2u);
  AlignedBuffer a(4096), b(4096);
  Request ra, rb;
  ra.op = rb.op = IoOp::write;
  ra.offset = 0;
  rb.offset = 4096;
  ra.length = rb.length = 4096;
  ra.buffer = a.data();
  rb.buffer = b.data();
  Waiter wa, wb;
  wa.arm(ra);
  wb.arm(rb);
  auto sub = engine_->open_submitter();
  ASSERT_EQ((*sub)->add(ra), 0);
  EXPECT_EQ(engine_->stats(0).subios, 0u) << "one sub-IO is below the high watermark of 2";
  ASSERT_EQ((*sub)->add(rb), 0);  // the batch reaches 2: handed on without an unplug
  for (uint32_t d = 0; d < 2; ++d)
    EXPECT_EQ(wait_stats(d, [](const DriveStats& s) { return s.subios == 1; }).subios, 1u) << "drive " << d;
  (*sub)->unplug();  // nothing left to hand on when the watermark worked
  wa.wait();
  wb.wait();
  EXPECT_EQ(wa.result.load(), 0);
  EXPECT_EQ(wb.result.load(), 0);
  // Held below the pool (4096 sub-IOs here), and low at or below high.
  engine_->set_watermarks(5000, 100000);
  EXPECT_EQ(engine_->high_watermark(), engine_->config().subios_per_submitter - 1);
  EXPECT_EQ(engine_->low_watermark(), engine_->high_watermark());
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
