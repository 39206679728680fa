// IO the calling thread does itself instead of handing it to a drive
// thread and waiting: a lone piece moved on its member
// (Engine::transfer_lone_piece), and completions reaped by a thread that
// would otherwise sleep until a drive thread wakes it (Engine::reap_here).
#include <cstring>
#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

class CallingThreadIo : public EngineFixture {
 protected:
  static constexpr uint32_t kUnit = 16384;
  void start_four(std::vector<DeviceLayers> layers = {}) {
    make_members(4, 1 << 20);
    if (!layers.empty()) layers_ = std::move(layers);
    start(EngineConfig{}, kUnit, specs());
  }
  // The member bytes at volume offset `off`, read past the engine.
  std::vector<std::byte> on_member(uint64_t off, uint64_t len) {
    StripePiece p = engine_->map().piece_at(off, len);
    AlignedBuffer b(len);
    EXPECT_EQ(members_[p.member].pread_full(b.data(), len, p.member_offset), 0);
    return std::vector<std::byte>(b.data(), b.data() + len);
  }
};

TEST_F(CallingThreadIo, ALonePieceIsWrittenAndReadOnItsMemberAndCounted) {
  start_four();
  // Unit 2 of the volume is member 2's first.
  const uint64_t off = 2 * kUnit + 8192;
  AlignedBuffer out(8192);
  fill(out, 7);
  ASSERT_EQ(engine_->transfer_lone_piece(IoOp::write, off, out.data(), out.size()), 0);
  std::vector<std::byte> got = on_member(off, out.size());
  EXPECT_EQ(std::memcmp(got.data(), out.data(), out.size()), 0);
  AlignedBuffer in(8192);
  ASSERT_EQ(engine_->transfer_lone_piece(IoOp::read, off, in.data(), in.size()), 0);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);

  DriveStats s = engine_->stats(2);
  EXPECT_EQ(s.ios, 2u);
  EXPECT_EQ(s.write_ios, 1u);
  EXPECT_EQ(s.read_ios, 1u);
  EXPECT_EQ(s.bytes_written, 8192u);
  EXPECT_EQ(s.bytes_read, 8192u);
  EXPECT_EQ(s.errors, 0u);
  for (uint32_t d : {0u, 1u, 3u}) EXPECT_EQ(engine_->stats(d).ios, 0u) << "drive " << d;
  // The write leaves drive 2, and only it, needing a flush.
  ASSERT_EQ(engine_->flush_lone_drive(), 0);
  EXPECT_EQ(engine_->stats(2).flushes, 1u);
  EXPECT_EQ(engine_->flush_lone_drive(), 0);
  EXPECT_EQ(engine_->stats(2).flushes, 1u);
}

// A member cut short under the volume: the piece past its end fails with
// EIO, is counted as an error and reported as past the member's end.
TEST_F(CallingThreadIo, ALonePiecePastAShortMembersEndFailsAndIsReported) {
  make_members(4, 1 << 20);
  ASSERT_EQ(::ftruncate(members_[2].fd(), 512 << 10), 0);
  std::vector<IoErrorReport> reports;
  EngineConfig c;
  c.on_io_error = [&reports](const IoErrorReport& r) { reports.push_back(r); };
  start(c, kUnit, specs());
  // Unit 4k+2 is member 2's k-th: member offset 40 * kUnit = 640 KiB.
  const uint64_t off = (4 * 40 + 2) * uint64_t{kUnit};
  AlignedBuffer in(4096);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::read, off, in.data(), in.size()), -EIO);
  EXPECT_EQ(engine_->stats(2).errors, 1u);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].drive, 2u);
  EXPECT_TRUE(reports[0].past_end);
  EXPECT_EQ(reports[0].member_offset, 40u * kUnit);
  EXPECT_EQ(reports[0].error, -EIO);
}

TEST_F(CallingThreadIo, ARangeOverTwoMembersOrMisalignedIsNotMovedHere) {
  start_four();
  AlignedBuffer b(8192);
  fill(b, 3);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::write, kUnit - 4096, b.data(), b.size()), -EOPNOTSUPP);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::write, 512, b.data(), 4096), -EINVAL);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::write, 0, b.data() + 512, 4096), -EINVAL);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::write, engine_->map().volume_size(), b.data(), 4096), -EINVAL);
  for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(engine_->stats(d).ios, 0u) << "drive " << d;
  std::vector<std::byte> got = on_member(kUnit - 4096, 4096);
  EXPECT_EQ(got, std::vector<std::byte>(4096, std::byte{0}));
}

// A device that models a drive's timing or faults keeps every IO on its
// model: nothing is moved past it.
TEST_F(CallingThreadIo, ADeviceThatModelsTheDriveIsLeftToItsRing) {
  std::vector<DeviceLayers> layers(4);
  auto gate = std::make_shared<GatedDevice::Gate>();
  layers[1].wrap = [gate](std::unique_ptr<DeviceQueue> inner) -> std::unique_ptr<DeviceQueue> {
    return std::make_unique<GatedDevice>(std::move(inner), gate);
  };
  start_four(std::move(layers));
  AlignedBuffer b(4096);
  fill(b, 5);
  EXPECT_EQ(engine_->transfer_lone_piece(IoOp::write, kUnit, b.data(), b.size()), -EOPNOTSUPP);
  EXPECT_EQ(gate->started.load(), 0u);
  EXPECT_EQ(on_member(kUnit, 4096), std::vector<std::byte>(4096, std::byte{0}));
}

// Hides the member's completions from every thread but one: the drive
// thread never completes an IO, so only reap_here() on that thread can.
class ReapedOnlyBy final : public DeviceQueue {
 public:
  ReapedOnlyBy(std::unique_ptr<DeviceQueue> inner, std::thread::id reaper)
      : inner_(std::move(inner)), reaper_(reaper) {}
  void start(const DeviceIo& io) override { inner_->start(io); }
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override { return mine() ? inner_->reap(out) : 0; }
  Status attach_waker(CompletionWaker& waker) override { return inner_->attach_waker(waker); }
  bool prepare_sleep(uint64_t& deadline_ns) override { return !mine() || inner_->prepare_sleep(deadline_ns); }
  bool has_ready() const override { return inner_->has_ready(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override { return inner_->reap_finished_inline(out); }

 private:
  bool mine() const { return std::this_thread::get_id() == reaper_; }
  std::unique_ptr<DeviceQueue> inner_;
  std::thread::id reaper_;
};

TEST_F(CallingThreadIo, AWaitingThreadCompletesIoThatTheDriveThreadHasNotReaped) {
  std::vector<DeviceLayers> layers(4);
  const std::thread::id me = std::this_thread::get_id();
  layers[0].wrap = [me](std::unique_ptr<DeviceQueue> inner) -> std::unique_ptr<DeviceQueue> {
    return std::make_unique<ReapedOnlyBy>(std::move(inner), me);
  };
  start_four(std::move(layers));
  AlignedBuffer b(4096);
  fill(b, 9);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  Request r = request_for(IoOp::write, 0, b);
  Waiter w;
  w.arm(r);
  ASSERT_EQ((*sub)->add(r), 0);
  (*sub)->unplug();
  // The write is on the member (or on its way); no thread but this one
  // can complete it.
  size_t reaped = 0;
  const uint64_t deadline = monotonic_ns() + 30000000000ull;  // a bug fails, not hangs
  while (w.done.load() == 0 && monotonic_ns() < deadline) {
    reaped += engine_->reap_here();
    std::this_thread::yield();
  }
  ASSERT_EQ(w.done.load(), 1);
  EXPECT_EQ(w.result.load(), 0);
  EXPECT_EQ(reaped, 1u);
  EXPECT_EQ(on_member(0, 4096), std::vector<std::byte>(b.data(), b.data() + 4096));
  EXPECT_EQ(engine_->reap_here(), 0u);
}

}  // namespace
}  // namespace peregrine::testing
