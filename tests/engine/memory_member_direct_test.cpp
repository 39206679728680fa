// Memory members (DeviceQueue::copies_inline): a request that is one piece
// on its member is moved by the thread that unplugs with
// Completions::here, past the drive's tags, backlog and ring; any other
// unplug, a request over two units or above inline_max_bytes, and a member
// that does not copy inline take the drives' path. Checked by the data on
// the members, the thread the callback ran on, and the counters (a piece
// moved directly is counted but not timed: device_latency stays empty).
#include <cstring>
#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

// Records where and how a request completed.
struct Seen {
  std::atomic<int> done{0};
  int result = 1;
  std::thread::id thread;
  static void on_complete(Request& r, int result) {
    auto* s = static_cast<Seen*>(r.context);
    s->result = result;
    s->thread = std::this_thread::get_id();
    s->done.store(1);
    s->done.notify_all();
  }
  void arm(Request& r) {
    r.on_complete = &Seen::on_complete;
    r.context = this;
  }
};

class MemoryMemberDirect : public EngineFixture {
 protected:
  static constexpr uint32_t kUnit = 16384;
  void start_four(bool copy_inline = true, EngineConfig config = {}) {
    make_members(4, 1 << 20);
    std::vector<DriveSpec> drives = specs();
    for (DriveSpec& d : drives) d.ring.copy_inline = copy_inline;
    start(config, kUnit, std::move(drives));
  }
  std::vector<std::byte> on_member(uint64_t off, uint64_t len) {
    StripePiece p = engine_->map().piece_at(off, len);
    AlignedBuffer b(len);
    EXPECT_EQ(members_[p.member].pread_full(b.data(), len, p.member_offset), 0);
    return std::vector<std::byte>(b.data(), b.data() + len);
  }
  // One request through a fresh submitter, unplugged with
  // Completions::here (the only unplug that moves pieces directly); waits
  // for it wherever it completes.
  int io_here(IoOp op, uint64_t offset, AlignedBuffer& buf) {
    auto sub = engine_->open_submitter();
    EXPECT_TRUE(sub);
    Request r = request_for(op, offset, buf);
    Seen seen;
    seen.arm(r);
    if (int rc = (*sub)->add(r); rc != 0) return rc;
    (*sub)->unplug(Submitter::Completions::here);
    seen.done.wait(0);
    return seen.result;
  }
};

TEST_F(MemoryMemberDirect, LonePiecesAreMovedByTheUnpluggingThreadBeforeUnplugReturns) {
  start_four();
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  // One 4 KiB write in each of the first eight units: two per member.
  constexpr int kN = 8;
  std::vector<AlignedBuffer> out;
  std::vector<Request> reqs(kN);
  std::vector<Seen> seen(kN);
  for (int i = 0; i < kN; ++i) {
    out.emplace_back(4096);
    fill(out.back(), 10 + i);
    reqs[i].op = IoOp::write;
    reqs[i].offset = static_cast<uint64_t>(i) * kUnit + 4096;
    reqs[i].length = 4096;
    reqs[i].buffer = out.back().data();
    seen[i].arm(reqs[i]);
    ASSERT_EQ((*sub)->add(reqs[i]), 0);
    EXPECT_EQ(seen[i].done.load(), 0) << "moved at add(), before any unplug";
  }
  EXPECT_TRUE((*sub)->has_staged());
  (*sub)->unplug(Submitter::Completions::here);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(seen[i].done.load(), 1) << "request " << i << " not complete when unplug returned";
    EXPECT_EQ(seen[i].result, 0);
    EXPECT_EQ(seen[i].thread, std::this_thread::get_id());
    std::vector<std::byte> got = on_member(reqs[i].offset, 4096);
    EXPECT_EQ(std::memcmp(got.data(), out[i].data(), 4096), 0) << "request " << i;
  }
  // Read back the same way.
  std::vector<AlignedBuffer> in;
  for (int i = 0; i < kN; ++i) {
    in.emplace_back(4096);
    reqs[i].op = IoOp::read;
    reqs[i].buffer = in.back().data();
    seen[i].done.store(0);
    ASSERT_EQ((*sub)->add(reqs[i]), 0);
  }
  (*sub)->unplug(Submitter::Completions::here);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(seen[i].done.load(), 1);
    EXPECT_EQ(seen[i].result, 0);
    EXPECT_EQ(std::memcmp(in[i].data(), out[i].data(), 4096), 0) << "request " << i;
  }
  for (uint32_t d = 0; d < 4; ++d) {
    DriveStats s = engine_->stats(d);
    EXPECT_EQ(s.ios, 4u) << "drive " << d;
    EXPECT_EQ(s.write_ios, 2u) << "drive " << d;
    EXPECT_EQ(s.read_ios, 2u) << "drive " << d;
    EXPECT_EQ(s.bytes_written, 8192u) << "drive " << d;
    EXPECT_EQ(s.bytes_read, 8192u) << "drive " << d;
    EXPECT_EQ(s.inline_batches, 0u) << "drive " << d;
    EXPECT_EQ(s.device_latency.count(), 0u) << "drive " << d;
  }
}

TEST_F(MemoryMemberDirect, WritesMovedDirectlyAreCoveredByTheNextFlush) {
  start_four();
  AlignedBuffer b(4096);
  fill(b, 5);
  ASSERT_EQ(io_here(IoOp::write, 2 * kUnit, b), 0);  // member 2 alone
  EXPECT_EQ(engine_->stats(2).write_ios, 1u);
  EXPECT_EQ(engine_->stats(2).device_latency.count(), 0u) << "not moved directly";
  Request flush{.op = IoOp::flush};
  Waiter w;
  w.arm(flush);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  ASSERT_EQ((*sub)->submit(flush), 0);
  w.wait();
  EXPECT_EQ(w.result.load(), 0);
  DriveStats s2 = wait_stats(2, [](const DriveStats& s) { return s.flushes == 1; });
  EXPECT_EQ(s2.flushes, 1u);
  for (uint32_t d : {0u, 1u, 3u}) EXPECT_EQ(engine_->stats(d).flushes, 0u) << "drive " << d;
}

TEST_F(MemoryMemberDirect, AnUnplugThatMayNotRunCallbacksSendsThePiecesToTheDrives) {
  start_four();
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  AlignedBuffer out(4096);
  fill(out, 9);
  Request r{.op = IoOp::write, .offset = kUnit, .length = 4096, .buffer = out.data()};
  Seen seen;
  seen.arm(r);
  ASSERT_EQ((*sub)->add(r), 0);
  (*sub)->unplug();  // Completions::on_drive_thread
  seen.done.wait(0);
  EXPECT_EQ(seen.result, 0);
  EXPECT_NE(seen.thread, std::this_thread::get_id());
  std::vector<std::byte> got = on_member(kUnit, 4096);
  EXPECT_EQ(std::memcmp(got.data(), out.data(), 4096), 0);
  DriveStats s = wait_stats(1, [](const DriveStats& s) { return s.ios == 1 && s.in_flight == 0; });
  EXPECT_EQ(s.device_latency.count(), 1u) << "went through the drive, which times its IO";
}

TEST_F(MemoryMemberDirect, RequestsOverTwoUnitsOrAboveInlineMaxGoThroughTheDrives) {
  EngineConfig c;
  c.inline_max_bytes = 8192;
  start_four(true, c);
  AlignedBuffer two(8192), big(12288);
  fill(two, 1);
  fill(big, 2);
  ASSERT_EQ(io_here(IoOp::write, kUnit - 4096, two), 0);  // the end of unit 0 and the start of unit 1
  ASSERT_EQ(io_here(IoOp::write, 2 * kUnit, big), 0);     // inside unit 2, above inline_max_bytes
  EXPECT_EQ(on_member(kUnit - 4096, 4096), std::vector<std::byte>(two.data(), two.data() + 4096));
  EXPECT_EQ(on_member(kUnit, 4096), std::vector<std::byte>(two.data() + 4096, two.data() + 8192));
  EXPECT_EQ(on_member(2 * kUnit, 12288), std::vector<std::byte>(big.data(), big.data() + 12288));
  for (uint32_t d : {0u, 1u, 2u}) {
    DriveStats s = wait_stats(d, [](const DriveStats& s) { return s.ios == 1 && s.in_flight == 0; });
    EXPECT_EQ(s.device_latency.count(), 1u) << "drive " << d;
  }
}

TEST_F(MemoryMemberDirect, MembersThatDoNotCopyInlineTakeTheDrivesPath) {
  start_four(false);
  AlignedBuffer b(4096);
  fill(b, 4);
  ASSERT_EQ(io_here(IoOp::write, 3 * kUnit, b), 0);
  DriveStats s = wait_stats(3, [](const DriveStats& s) { return s.ios == 1 && s.in_flight == 0; });
  EXPECT_EQ(s.device_latency.count(), 1u);
}

TEST_F(MemoryMemberDirect, AMemberShorterThanTheVolumeSaysFailsTheReadAndReportsIt) {
  make_members(4, 1 << 20);
  // Member 1 loses its second half after the volume was laid out.
  ASSERT_EQ(::ftruncate(members_[1].fd(), 512 << 10), 0);
  std::vector<IoErrorReport> reports;
  EngineConfig c;
  c.on_io_error = [&reports](const IoErrorReport& r) { reports.push_back(r); };
  std::vector<DriveSpec> drives = specs();
  for (DriveSpec& d : drives) d.ring.copy_inline = true;
  start(c, kUnit, std::move(drives));
  // Unit 4k+1 is member 1's k-th: member offset 40 * kUnit = 640 KiB.
  const uint64_t off = (4 * 40 + 1) * uint64_t{kUnit};
  ASSERT_EQ(engine_->map().piece_at(off, 4096).member, 1u);
  // Moved here (Completions::here), so this is the direct path's failure.
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  AlignedBuffer in(4096);
  Request r{.op = IoOp::read, .offset = off, .length = 4096, .buffer = in.data()};
  Seen seen;
  seen.arm(r);
  ASSERT_EQ((*sub)->add(r), 0);
  (*sub)->unplug(Submitter::Completions::here);
  ASSERT_EQ(seen.done.load(), 1);
  EXPECT_EQ(seen.thread, std::this_thread::get_id());
  EXPECT_EQ(seen.result, -EIO);
  EXPECT_EQ(engine_->stats(1).errors, 1u);
  EXPECT_EQ(engine_->stats(1).device_latency.count(), 0u) << "went through the drive";
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].drive, 1u);
  EXPECT_TRUE(reports[0].past_end);
  EXPECT_EQ(reports[0].member_offset, 40u * kUnit);
  EXPECT_EQ(reports[0].error, -EIO);
}

// A callback that submits the next request of a chain on the same thread
// (as a FUSE thread's reply path may): each is moved by the unplug its
// predecessor's callback makes, and every byte lands.
TEST_F(MemoryMemberDirect, ACallbackThatSubmitsAgainOnTheSameThreadIsServedToo) {
  start_four();
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  struct Chain {
    Submitter* sub;
    std::vector<AlignedBuffer> bufs;
    std::vector<Request> reqs;
    std::vector<int> results;
    size_t next = 0;
    static void on_complete(Request& r, int result) {
      auto* c = static_cast<Chain*>(r.context);
      c->results.push_back(result);
      if (c->next < c->reqs.size()) {
        Request& n = c->reqs[c->next++];
        ASSERT_EQ(c->sub->add(n), 0);
        c->sub->unplug(Submitter::Completions::here);
      }
    }
  };
  Chain chain{.sub = sub->get(), .bufs = {}, .reqs = std::vector<Request>(12), .results = {}};
  for (size_t i = 0; i < chain.reqs.size(); ++i) {
    chain.bufs.emplace_back(4096);
    fill(chain.bufs.back(), static_cast<int>(40 + i));
    Request& r = chain.reqs[i];
    r.op = IoOp::write;
    r.offset = i * kUnit;
    r.length = 4096;
    r.buffer = chain.bufs.back().data();
    r.on_complete = &Chain::on_complete;
    r.context = &chain;
  }
  chain.next = 1;
  ASSERT_EQ((*sub)->add(chain.reqs[0]), 0);
  (*sub)->unplug(Submitter::Completions::here);
  ASSERT_EQ(chain.results.size(), chain.reqs.size());
  for (size_t i = 0; i < chain.reqs.size(); ++i) {
    EXPECT_EQ(chain.results[i], 0);
    std::vector<std::byte> got = on_member(i * kUnit, 4096);
    EXPECT_EQ(std::memcmp(got.data(), chain.bufs[i].data(), 4096), 0) << "request " << i;
  }
}

}  // namespace
}  // namespace peregrine::testing
