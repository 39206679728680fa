// Shutdown with IO in flight: destroying the engine right after submitting
// completes every request (callbacks run, data written), then stops.
#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

struct Counter {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  static void done(Request& r, int result) {
    auto* c = static_cast<Counter*>(r.context);
    (result == 0 ? c->ok : c->failed).fetch_add(1);
  }
};

TEST_F(EngineFixture, DestroyingTheEngineCompletesQueuedAndInFlightIo) {
  make_members(4, 1 << 20);
  ShapeParams slow;  // a slow drive keeps IO in flight at destruction
  slow.latency_ns = 2000000;
  slow.queue_depth = 4;
  auto drives = specs(4);
  for (DeviceLayers& l : layers_) l.shape = slow;
  EngineConfig c;
  start(c, 4096, std::move(drives));
  const int n = 128;
  std::vector<AlignedBuffer> bufs;
  std::vector<Request> reqs(n);
  Counter counter;
  {
    auto sub = engine_->open_submitter();
    for (int i = 0; i < n; ++i) {
      bufs.emplace_back(8192);
      fill(bufs.back(), i + 77);
      reqs[i].op = IoOp::write;
      reqs[i].offset = static_cast<uint64_t>(i) * 8192;
      reqs[i].length = 8192;
      reqs[i].buffer = bufs.back().data();
      reqs[i].on_complete = &Counter::done;
      reqs[i].context = &counter;
      ASSERT_EQ((*sub)->add(reqs[i]), 0);
    }
  }  // the submitter's destructor unplugs
  engine_.reset();
  EXPECT_EQ(counter.ok.load(), n);
  EXPECT_EQ(counter.failed.load(), 0);
  // Every write reached the members.
  StripeMap map(4, 4096, 0, 1 << 20);
  AlignedBuffer unit(4096);
  for (int i = 0; i < n; ++i) {
    for (int half = 0; half < 2; ++half) {
      StripePiece p = map.piece_at(static_cast<uint64_t>(i) * 8192 + half * 4096, 4096);
      ASSERT_EQ(members_[p.member].pread_full(unit.data(), 4096, p.member_offset), 0);
      ASSERT_EQ(std::memcmp(unit.data(), bufs[i].data() + half * 4096, 4096), 0) << "request " << i;
    }
  }
}

}  // namespace
}  // namespace peregrine::testing
