// Dynamic tags and the backlog: with every tag busy, further IOs wait in the
// drive's backlog and go out first-in first-out across rounds, so an IO at a
// high offset is not starved by later IOs at lower offsets.
#include <mutex>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

struct Order {
  std::mutex mu;
  std::vector<int> ids;
};

// Opens the gates however the test ends: a failed ASSERT while they are
// shut would otherwise leave completions held, and the engine's teardown
// would wait for them until ctest's timeout. Declared after what the IOs'
// callbacks touch, so that it opens the gates before those go.
struct OpenOnExit {
  std::vector<std::shared_ptr<GatedDevice::Gate>> gates;
  ~OpenOnExit() {
    for (auto& g : gates) g->set_open(true);
  }
};

struct Tracked {
  Request req;
  Waiter waiter;
  int id = 0;
  Order* order = nullptr;
  static void done(Request& r, int result) {
    auto* t = static_cast<Tracked*>(r.context);
    {
      std::lock_guard<std::mutex> lock(t->order->mu);
      t->order->ids.push_back(t->id);
    }
    t->waiter.result.store(result);
    t->waiter.done.store(1);
    t->waiter.done.notify_all();
  }
};

TEST_F(EngineFixture, BacklogIsFifoAcrossRoundsWhenTagsRunOut) {
  make_members(1, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  auto gate = std::make_shared<GatedDevice::Gate>();
  gate->open.store(false);
  auto drives = specs(/*queue_depth=*/1);
  layers_[0].wrap = [gate](std::unique_ptr<DeviceQueue> d) {
    return std::make_unique<GatedDevice>(std::move(d), gate);
  };
  start(c, 4096, std::move(drives));
  Order order;
  // id 0 takes the only tag; id 1 (high offset) waits; ids 2, 3 (lower
  // offsets) arrive in later rounds and must not overtake id 1.
  uint64_t offsets[4] = {0, 900 * 1024, 4096, 8192};
  std::vector<std::unique_ptr<Tracked>> t;
  std::vector<AlignedBuffer> bufs;
  auto sub = engine_->open_submitter();
  OpenOnExit open_on_exit{{gate}};  // after what the IOs' callbacks use
  for (int i = 0; i < 4; ++i) {
    t.push_back(std::make_unique<Tracked>());
    bufs.emplace_back(4096);
    Tracked& x = *t.back();
    x.id = i;
    x.order = &order;
    x.req.op = IoOp::read;
    x.req.offset = offsets[i];
    x.req.length = 4096;
    x.req.buffer = bufs.back().data();
    x.req.on_complete = &Tracked::done;
    x.req.context = &x;
    ASSERT_EQ((*sub)->submit(x.req), 0);
    // Each request is its own round: wait until the drive has taken it in.
    uint64_t want_backlog = static_cast<uint64_t>(i);
    wait_stats(
        0, [&](const DriveStats& s) { return s.subios == static_cast<uint64_t>(i + 1) && s.backlog == want_backlog; });
  }
  EXPECT_EQ(gate->started.load(), 1u) << "only one tag: only one IO may be on the device";
  EXPECT_GE(engine_->stats(0).tag_waits, 1u);
  gate->set_open(true);
  for (auto& x : t) x->waiter.wait();
  EXPECT_EQ(order.ids, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(EngineFixture, ManyRequestsThroughFewTagsAllCompleteWithTheirData) {
  make_members(2, 1 << 20);
  EngineConfig c;
  c.inline_dispatch = false;
  // Completions are held until every request is in its drive, so that the
  // drives must wait for tags whatever the scheduling: with completions let
  // through, a fast device could free each tag before the next dispatch.
  // A gate per drive: a gate wakes the one drive thread that attached last.
  std::shared_ptr<GatedDevice::Gate> gates[2];
  for (int d = 0; d < 2; ++d) {
    gates[d] = std::make_shared<GatedDevice::Gate>();
    gates[d]->open.store(false);
    layers_[d].wrap = [gate = gates[d]](std::unique_ptr<DeviceQueue> dev) {
      return std::make_unique<GatedDevice>(std::move(dev), gate);
    };
  }
  start(c, 4096, specs(/*queue_depth=*/2));
  const int n = 200;
  std::vector<AlignedBuffer> out;
  for (int i = 0; i < n; ++i) {
    out.emplace_back(4096);
    fill(out.back(), i + 5);
  }
  std::vector<Request> reqs(n);
  std::vector<Waiter> w(n);
  auto sub = engine_->open_submitter();
  OpenOnExit open_on_exit{{gates[0], gates[1]}};  // after what the IOs' callbacks use
  for (int i = 0; i < n; ++i) {
    reqs[i].op = IoOp::write;
    // Units 0, 1, 4, 5, 8, 9...: alternate drives, and on each drive every
    // other unit, so that no two IOs merge.
    reqs[i].offset = static_cast<uint64_t>(i / 2 * 4 + i % 2) * 4096;
    reqs[i].length = 4096;
    reqs[i].buffer = out[i].data();
    w[i].arm(reqs[i]);
    ASSERT_EQ((*sub)->add(reqs[i]), 0);
  }
  (*sub)->unplug();
  // Each drive has its 100: two on the device, the rest waiting for a tag.
  for (uint32_t d = 0; d < 2; ++d) {
    wait_stats(d, [&](const DriveStats& s) { return s.subios == n / 2u && s.backlog == n / 2u - 2; });
  }
  for (auto& gate : gates) {
    EXPECT_EQ(gate->started.load(), 2u) << "two tags per drive: two IOs each on the device";
    gate->set_open(true);
  }
  for (auto& x : w) {
    x.wait();
    ASSERT_EQ(x.result.load(), 0);
  }
  for (int i = 0; i < n; ++i) {
    AlignedBuffer in(4096);
    ASSERT_EQ(io(IoOp::read, reqs[i].offset, in), 0);
    ASSERT_EQ(std::memcmp(in.data(), out[i].data(), 4096), 0) << "request " << i;
  }
  for (uint32_t d = 0; d < 2; ++d) {
    EXPECT_GT(engine_->stats(d).tag_waits, 0u) << "drive " << d << ": 100 IOs through 2 tags must have waited";
  }
}

}  // namespace
}  // namespace peregrine::testing
