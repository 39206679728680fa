// The engine's side of an online restripe (Engine::add_drive, the layout
// fence and the restripe calls): a drive added while IO runs, units below
// the cursor served from their new places, IO to a closed window held back
// until it opens, a window that closes only once the IO in flight there is
// done, a start that waits for IO that passed without the fence, and many
// threads writing and reading while the test moves every unit; an added
// drive's thread placed as a mount would place it. The test
// moves the units itself, through the member files, as the mover does.
#include <sched.h>

#include <cstring>
#include <random>
#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

constexpr uint32_t kUnit = 16384;
constexpr uint32_t kOld = 2, kNew = 3;
constexpr uint64_t kRows = 32;  // units per member

// One gate per drive (a gate wakes the one drive thread that attached
// to it last).
struct Gates {
  std::shared_ptr<GatedDevice::Gate> of[kNew] = {std::make_shared<GatedDevice::Gate>(),
                                                 std::make_shared<GatedDevice::Gate>(),
                                                 std::make_shared<GatedDevice::Gate>()};
  void set_open(bool open) {
    for (auto& g : of) g->set_open(open);
  }
  uint64_t started() const {
    uint64_t n = 0;
    for (const auto& g : of) n += g->started.load();
    return n;
  }
};

class OnlineRestripeEngine : public EngineFixture {
 protected:
  // Three member files; the engine starts over the first two.
  void start_two(Gates* gates = nullptr, const EngineConfig& config = EngineConfig{}) {
    make_members(kNew, kRows * kUnit);
    if (gates)
      for (uint32_t i = 0; i < kNew; ++i)
        layers_[i].wrap = [gate = gates->of[i]](std::unique_ptr<DeviceQueue> d) -> std::unique_ptr<DeviceQueue> {
          return std::make_unique<GatedDevice>(std::move(d), gate);
        };
    std::vector<DriveSpec> all = specs();
    std::vector<DriveSpec> two(all.begin(), all.begin() + kOld);
    StripeMap map(kOld, kUnit, 0, kRows * kUnit);
    LayeredDeviceFactory devices(layers_);
    auto e = Engine::create(config, map, std::move(two), devices);
    ASSERT_TRUE(e) << e.status().message();
    engine_ = std::move(*e);
    new_spec_ = all[kOld];
  }
  void add_third(Gates* gates = nullptr) {
    auto ring = UringDeviceFactory::open_ring(new_spec_);
    ASSERT_TRUE(ring) << ring.status().message();
    std::unique_ptr<DeviceQueue> device = std::move(*ring);
    if (gates) device = std::make_unique<GatedDevice>(std::move(device), gates->of[kOld]);
    Status s = engine_->add_drive(new_spec_, std::move(device));
    ASSERT_TRUE(s) << s.message();
    ASSERT_EQ(engine_->drive_count(), kNew);
  }
  // Unit u's bytes moved from its old place to its new one, as the mover
  // moves them (through the member files, not the engine).
  void move_unit(uint64_t u) {
    if (u < kOld) return;  // row 0 of the old members stays
    AlignedBuffer b(kUnit);
    ASSERT_EQ(members_[u % kOld].pread_full(b.data(), kUnit, u / kOld * kUnit), 0);
    ASSERT_EQ(members_[u % kNew].pwrite_full(b.data(), kUnit, u / kNew * kUnit), 0);
  }
  // Window [u, u + 1): always safe, as its new place holds a unit already
  // moved or itself (docs/format.md, section 5b).
  void move_window(uint64_t u, Submitter& via) {
    engine_->close_window(u, u + 1);
    move_unit(u);
    engine_->open_window(u + 1, via);
  }
  static void wait_until(const std::function<bool()>& pred) {
    const uint64_t deadline = monotonic_ns() + 30'000'000'000ull;
    while (!pred()) {
      ASSERT_LT(monotonic_ns(), deadline) << "the state never came";
      std::this_thread::yield();
    }
  }
  AlignedBuffer pattern(uint64_t len, uint64_t seed) {
    AlignedBuffer b(len);
    fill(b, seed);
    return b;
  }
  // A write of unit `u` in flight before any restripe: the engine over
  // gated drives (the third added), the gates shut, the write started.
  struct HeldWrite {
    AlignedBuffer bytes{kUnit};
    Request request;
    Waiter waiter;
    std::unique_ptr<Submitter> sub;
  };
  std::unique_ptr<HeldWrite> hold_a_write(Gates& gate, uint64_t u, uint64_t seed) {
    start_two(&gate);
    add_third(&gate);
    gate.set_open(false);
    auto h = std::make_unique<HeldWrite>();
    fill(h->bytes, seed);
    h->request.op = IoOp::write;
    h->request.offset = u * kUnit;
    h->request.length = kUnit;
    h->request.buffer = h->bytes.data();
    h->waiter.arm(h->request);
    auto sub = engine_->open_submitter();
    EXPECT_TRUE(sub);
    if (!sub) return nullptr;
    h->sub = std::move(*sub);
    EXPECT_EQ(h->sub->submit(h->request), 0);
    wait_until([&] { return gate.started() >= 1; });
    return h;
  }

  DriveSpec new_spec_;
};

// The CPUs the thread named `name` of this process may run on (empty when
// there is none).
std::vector<int> cpus_of_thread(const std::string& name) {
  std::vector<int> cpus;
  for (const auto& [tid, got] : process_threads()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (got != name || ::sched_getaffinity(tid, sizeof set, &set) != 0) continue;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// An added drive's thread is pinned as a mount over all the drives would
// pin it (here: every drive on the last CPU this process may use; then
// round-robin, whichever CPU the adding thread is on), and left to the
// scheduler when the config pins none.
TEST_F(OnlineRestripeEngine, AnAddedDrivesThreadIsPlacedAsAMountWouldPlaceIt) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: a pinned thread and a free one look alike";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  EngineConfig pinned;
  pinned.drive_cpus = {cpus.back()};
  start_two(nullptr, pinned);
  add_third();
  EXPECT_EQ(cpus_of_thread("pg-drive-2"), std::vector<int>{cpus.back()});
  engine_.reset();

  EngineConfig free;
  free.pin_drive_threads = false;
  start_two(nullptr, free);
  add_third();
  EXPECT_EQ(cpus_of_thread("pg-drive-2"), cpus);
  engine_.reset();

  // Automatic placement (members of no NUMA node: round-robin over the
  // CPUs), the drive added by a thread pinned to one CPU, as a ring
  // thread serving the ioctl is: placed over the CPUs the engine was made
  // with, not the adding thread's.
  const int due = cpus[kOld % cpus.size()];
  const int other = due == cpus.back() ? cpus.front() : cpus.back();
  start_two();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(other, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  add_third();
  ASSERT_EQ(::sched_setaffinity(0, sizeof mine, &mine), 0);
  EXPECT_EQ(cpus_of_thread("pg-drive-2"), std::vector<int>{due});
}

TEST_F(OnlineRestripeEngine, UnitsBelowTheCursorAreServedFromTheirNewPlaces) {
  start_two();
  const uint64_t old_size = kOld * kRows * kUnit;
  AlignedBuffer before = pattern(old_size, 7);
  ASSERT_EQ(io(IoOp::write, 0, before), 0);
  add_third();
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  ASSERT_TRUE(engine_->begin_restripe(kNew, **via));
  EXPECT_EQ(engine_->map().volume_size(), old_size) << "the volume grows only at the finish";
  const uint64_t half = kOld * kRows / 2;
  for (uint64_t u = 0; u < half; ++u) move_window(u, **via);
  // Writes on both sides of the cursor, then everything read back.
  AlignedBuffer low = pattern(kUnit, 8), high = pattern(kUnit, 9);
  ASSERT_EQ(io(IoOp::write, 3 * kUnit, low), 0);
  ASSERT_EQ(io(IoOp::write, (half + 3) * kUnit, high), 0);
  std::memcpy(before.data() + 3 * kUnit, low.data(), kUnit);
  std::memcpy(before.data() + (half + 3) * kUnit, high.data(), kUnit);
  AlignedBuffer got(old_size);
  ASSERT_EQ(io(IoOp::read, 0, got), 0);
  EXPECT_EQ(std::memcmp(got.data(), before.data(), old_size), 0);
  // Where the bytes are: unit 3 on member 0 row 1 of three; unit half + 3
  // still on member (half + 3) mod 2, row (half + 3) / 2.
  AlignedBuffer at(kUnit);
  ASSERT_EQ(members_[3 % kNew].pread_full(at.data(), kUnit, 3 / kNew * kUnit), 0);
  EXPECT_EQ(std::memcmp(at.data(), low.data(), kUnit), 0) << "unit 3 not in its new place";
  ASSERT_EQ(members_[(half + 3) % kOld].pread_full(at.data(), kUnit, (half + 3) / kOld * kUnit), 0);
  EXPECT_EQ(std::memcmp(at.data(), high.data(), kUnit), 0) << "a unit above the cursor left its old place";

  for (uint64_t u = half; u < kOld * kRows; ++u) move_window(u, **via);
  engine_->finish_restripe();
  EXPECT_EQ(engine_->map().volume_size(), kNew * kRows * kUnit);
  EXPECT_FALSE(engine_->map().restriping());
  ASSERT_EQ(io(IoOp::read, 0, got), 0);
  EXPECT_EQ(std::memcmp(got.data(), before.data(), old_size), 0);
  // The new end of the volume: the last unit is on the added member.
  AlignedBuffer last = pattern(kUnit, 10);
  const uint64_t last_unit = kNew * kRows - 1;
  ASSERT_EQ(io(IoOp::write, last_unit * kUnit, last), 0);
  ASSERT_EQ(members_[last_unit % kNew].pread_full(at.data(), kUnit, last_unit / kNew * kUnit), 0);
  EXPECT_EQ(std::memcmp(at.data(), last.data(), kUnit), 0);
  EXPECT_GT(engine_->stats(2).write_ios, 0u) << "the added drive served no write";
}

TEST_F(OnlineRestripeEngine, IoToAClosedWindowWaitsUntilItIsMoved) {
  start_two();
  AlignedBuffer old_bytes = pattern(kUnit, 21);
  const uint64_t u = 5;  // moves from member 1 row 2 to member 2 row 1
  ASSERT_EQ(io(IoOp::write, u * kUnit, old_bytes), 0);
  add_third();
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  ASSERT_TRUE(engine_->begin_restripe(kNew, **via));
  for (uint64_t v = 0; v < u; ++v) move_window(v, **via);
  engine_->close_window(u, u + 1);
  // A write and a read of the window's unit, from another thread.
  AlignedBuffer new_bytes = pattern(kUnit, 22), read_back(kUnit);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  Request w = request_for(IoOp::write, u * kUnit, new_bytes);
  Request r = request_for(IoOp::read, u * kUnit, read_back);
  Waiter ww, rw;
  ww.arm(w);
  rw.arm(r);
  ASSERT_EQ((*sub)->add(w), 0);
  ASSERT_EQ((*sub)->add(r), 0);
  (*sub)->unplug();
  EXPECT_EQ(engine_->restripe_parked(), 2u);
  EXPECT_EQ(ww.done.load(), 0) << "a write reached a closed window";
  EXPECT_EQ(rw.done.load(), 0) << "a read reached a closed window";
  move_unit(u);
  engine_->open_window(u + 1, **via);
  ww.wait();
  rw.wait();
  EXPECT_EQ(ww.result.load(), 0);
  EXPECT_EQ(rw.result.load(), 0);
  EXPECT_EQ(std::memcmp(read_back.data(), new_bytes.data(), kUnit), 0);
  // The write landed in the unit's new place, after the move.
  AlignedBuffer at(kUnit);
  ASSERT_EQ(members_[u % kNew].pread_full(at.data(), kUnit, u / kNew * kUnit), 0);
  EXPECT_EQ(std::memcmp(at.data(), new_bytes.data(), kUnit), 0);
  EXPECT_EQ(engine_->restripe_parked(), 0u);
}

TEST_F(OnlineRestripeEngine, AWindowClosesOnlyOnceTheIoInFlightThereIsDone) {
  Gates gate;
  start_two(&gate);
  add_third(&gate);
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  ASSERT_TRUE(engine_->begin_restripe(kNew, **via));
  gate.set_open(false);
  const uint64_t u = 7;
  AlignedBuffer bytes = pattern(kUnit, 31);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  Request w = request_for(IoOp::write, u * kUnit, bytes);
  Waiter ww;
  ww.arm(w);
  ASSERT_EQ((*sub)->submit(w), 0);
  wait_until([&] { return gate.started() >= 1; });
  EXPECT_EQ(engine_->restripe_in_flight(), 1u) << "the write above the cursor is not waited for";
  std::atomic<bool> gate_opened{false}, returned_early{false};
  std::thread closer([&] {
    engine_->close_window(u, u + 1);
    returned_early.store(!gate_opened.load());
  });
  // The window closed: a probe parks, and the closer waits.
  wait_until([&] { return engine_->restripe_window().second == u + 1; });
  AlignedBuffer probe_buf(kUnit);
  Request probe = request_for(IoOp::read, u * kUnit, probe_buf);
  Waiter pw;
  pw.arm(probe);
  ASSERT_EQ((*sub)->submit(probe), 0);
  wait_until([&] { return engine_->restripe_parked() == 1; });
  gate_opened.store(true);
  gate.set_open(true);
  closer.join();
  EXPECT_FALSE(returned_early.load()) << "close_window returned with a write in flight in the window";
  ww.wait();
  EXPECT_EQ(ww.result.load(), 0);
  move_unit(u);  // the write, in the old place, moves with the unit
  engine_->open_window(u + 1, **via);
  pw.wait();
  EXPECT_EQ(pw.result.load(), 0);
  EXPECT_EQ(std::memcmp(probe_buf.data(), bytes.data(), kUnit), 0);
}

TEST_F(OnlineRestripeEngine, TheStartWaitsForIoThatPassedWithoutTheFence) {
  Gates gate;
  auto held = hold_a_write(gate, 9, 41);
  ASSERT_TRUE(held);
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  std::atomic<bool> gate_opened{false}, returned_early{false};
  Status begun = Status::ok();
  std::thread starter([&] {
    begun = engine_->begin_restripe(kNew, **via);
    returned_early.store(!gate_opened.load());
  });
  // IO that comes while the start drains waits for it (the map changes
  // once the fence holds every request back).
  wait_until([&] { return engine_->map().restriping(); });
  AlignedBuffer probe_buf(kUnit);
  Request probe = request_for(IoOp::read, 9 * kUnit, probe_buf);
  Waiter pw;
  pw.arm(probe);
  auto other = engine_->open_submitter();
  ASSERT_TRUE(other);
  ASSERT_EQ((*other)->submit(probe), 0);
  wait_until([&] { return engine_->restripe_parked() == 1; });
  EXPECT_EQ(pw.done.load(), 0);
  gate_opened.store(true);
  gate.set_open(true);
  starter.join();
  ASSERT_TRUE(begun) << begun.message();
  EXPECT_FALSE(returned_early.load()) << "begin_restripe returned with unfenced IO in flight";
  held->waiter.wait();
  pw.wait();
  EXPECT_EQ(pw.result.load(), 0);
  EXPECT_EQ(std::memcmp(probe_buf.data(), held->bytes.data(), kUnit), 0);
}

TEST_F(OnlineRestripeEngine, AStartThatCannotDrainLeavesTheOldLayout) {
  Gates gate;
  auto held = hold_a_write(gate, 4, 51);
  ASSERT_TRUE(held);
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  Status s = engine_->begin_restripe(kNew, **via, std::chrono::milliseconds(1));
  EXPECT_EQ(s.errnum(), ETIMEDOUT) << s.message();
  EXPECT_FALSE(engine_->map().restriping());
  gate.set_open(true);
  held->waiter.wait();
  AlignedBuffer got(kUnit);
  ASSERT_EQ(io(IoOp::read, 4 * kUnit, got), 0);
  EXPECT_EQ(std::memcmp(got.data(), held->bytes.data(), kUnit), 0);
  // Unit 4 stayed on member 0, row 2.
  ASSERT_EQ(members_[0].pread_full(got.data(), kUnit, 2 * kUnit), 0);
  EXPECT_EQ(std::memcmp(got.data(), held->bytes.data(), kUnit), 0);
}

// Writers and readers on every unit while the test moves them all: each
// writer owns a set of units and checks, on its reads, that it finds what
// it wrote last.
TEST_F(OnlineRestripeEngine, IoOfManyThreadsDuringTheWholeRestripeLosesNothing) {
  start_two();
  const uint64_t units = kOld * kRows;
  AlignedBuffer zero(units * kUnit);
  ASSERT_EQ(io(IoOp::write, 0, zero), 0);
  add_third();
  auto via = engine_->open_submitter();
  ASSERT_TRUE(via);
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> mismatches{0}, failures{0}, ios{0};
  std::vector<std::vector<uint64_t>> last(kThreads, std::vector<uint64_t>(units, 0));
  auto worker = [&](int t) {
    auto sub = engine_->open_submitter();
    if (!sub) {
      failures.fetch_add(1);
      return;
    }
    std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
    AlignedBuffer buf(4096), check(4096);
    uint64_t version = 0;
    while (!stop.load()) {
      // Thread t owns the 4 KiB blocks t, t + kThreads, ... of each unit.
      const uint64_t u = rng() % units;
      const uint64_t block = static_cast<uint64_t>(t);
      const uint64_t off = u * kUnit + block * 4096;
      Waiter w;
      Request r = request_for(IoOp::write, off, buf);
      if (rng() % 2 == 0) {
        ++version;
        std::memcpy(buf.data(), &version, sizeof version);
        std::memcpy(buf.data() + 8, &u, sizeof u);
        w.arm(r);
        if ((*sub)->submit(r) != 0) failures.fetch_add(1);
        w.wait();
        if (w.result.load() != 0) failures.fetch_add(1);
        last[t][u] = version;
      } else {
        Request rd = request_for(IoOp::read, off, check);
        w.arm(rd);
        if ((*sub)->submit(rd) != 0) failures.fetch_add(1);
        w.wait();
        uint64_t seen = 0;
        std::memcpy(&seen, check.data(), sizeof seen);
        if (w.result.load() != 0) failures.fetch_add(1);
        if (seen != last[t][u]) mismatches.fetch_add(1);
      }
      ios.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  wait_until([&] { return ios.load() >= 200; });
  ASSERT_TRUE(engine_->begin_restripe(kNew, **via));
  for (uint64_t u = 0; u < units; ++u) {
    move_window(u, **via);
    const uint64_t seen = ios.load();
    wait_until([&] { return ios.load() >= seen + 8; });  // IO between windows
  }
  engine_->finish_restripe();
  const uint64_t after = ios.load();
  wait_until([&] { return ios.load() >= after + 200; });
  stop.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(mismatches.load(), 0u);
  EXPECT_EQ(engine_->restripe_in_flight(), 0u);
  // And through the members: every block where the final layout says.
  for (int t = 0; t < kThreads; ++t)
    for (uint64_t u = 0; u < units; ++u) {
      AlignedBuffer at(4096);
      ASSERT_EQ(members_[u % kNew].pread_full(at.data(), 4096, u / kNew * kUnit + uint64_t(t) * 4096), 0);
      uint64_t v = 0;
      std::memcpy(&v, at.data(), sizeof v);
      EXPECT_EQ(v, last[t][u]) << "unit " << u << ", thread " << t;
    }
}

}  // namespace
}  // namespace peregrine::testing
