// SPSC hand-off under two producers: two submitting threads, each with its
// own Submitter (so its own queue per drive), write interleaved regions at
// the same time; everything arrives and lands byte for byte.
#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

TEST_F(EngineFixture, TwoProducersHandOffEverySubIo) {
  make_members(4, 2 << 20);
  EngineConfig c;
  c.high_watermark = 8;  // many small batches: many hand-offs
  c.inline_dispatch = false;
  start(c, 4096, specs(16));
  const int per_thread = 256;
  const uint64_t len = 3 * 4096;  // crosses drives
  auto producer = [&](int t) {
    auto sub = engine_->open_submitter();
    ASSERT_TRUE(sub);
    std::vector<AlignedBuffer> bufs;
    std::vector<Request> reqs(per_thread);
    std::vector<Waiter> w(per_thread);
    for (int i = 0; i < per_thread; ++i) {
      bufs.emplace_back(len);
      fill(bufs.back(), static_cast<uint64_t>(t * 100000 + i));
      reqs[i].op = IoOp::write;
      reqs[i].offset = (static_cast<uint64_t>(i) * 2 + static_cast<uint64_t>(t)) * len;
      reqs[i].length = len;
      reqs[i].buffer = bufs.back().data();
      w[i].arm(reqs[i]);
      ASSERT_EQ((*sub)->add(reqs[i]), 0);
    }
    (*sub)->unplug();
    for (auto& x : w) {
      x.wait();
      ASSERT_EQ(x.result.load(), 0);
    }
  };
  std::thread a(producer, 0), b(producer, 1);
  a.join();
  b.join();
  uint64_t subios = 0;
  for (uint32_t d = 0; d < 4; ++d)
    subios += wait_stats(d, [](const DriveStats& s) { return s.in_flight == 0 && s.queued == 0; }).subios;
  EXPECT_EQ(subios, 2u * per_thread * 3);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      AlignedBuffer expect(len), in(len);
      fill(expect, static_cast<uint64_t>(t * 100000 + i));
      ASSERT_EQ(io(IoOp::read, (static_cast<uint64_t>(i) * 2 + static_cast<uint64_t>(t)) * len, in), 0);
      ASSERT_EQ(std::memcmp(in.data(), expect.data(), len), 0) << "thread " << t << " request " << i;
    }
  }
}

}  // namespace
}  // namespace peregrine::testing
