// Data round trip on real files: random writes, then reads, of several MiB
// across 4 members, checked byte for byte against an in-memory model and
// against the member files themselves, under both schedulers, with IO
// through the ring, copied inline (the mode for tmpfs members), through a
// ring polled by a kernel thread (SQPOLL) and through a one-entry SQ that
// must be submitted piecewise; and with one drive thread serving all four
// drives, and with a thread for each.
#include <cstring>
#include <random>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

struct RoundTripMode {
  Scheduler scheduler;
  RingOptions ring;
  const char* name;
  uint32_t drive_threads = 0;  // EngineConfig::drive_threads
};

class DataRoundTrip : public EngineFixture, public ::testing::WithParamInterface<RoundTripMode> {};

TEST_P(DataRoundTrip, RandomWritesReadBackExactly) {
  const uint32_t unit = 16384;
  make_members(4, 4 << 20, 8192);
  EngineConfig c;
  c.scheduler = GetParam().scheduler;
  c.drive_threads = GetParam().drive_threads;
  std::vector<DriveSpec> drives = specs(8);
  for (DriveSpec& d : drives) d.ring = GetParam().ring;
  start(c, unit, std::move(drives));
  uint64_t vol = engine_->map().volume_size();
  std::vector<std::byte> model(vol, std::byte{0});
  std::mt19937_64 rng(7);
  auto sub = engine_->open_submitter();
  ASSERT_TRUE(sub);
  // Many writes in flight at once, each with its own buffer.
  const int kWrites = 96;
  std::vector<AlignedBuffer> bufs;
  std::vector<Request> reqs(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    // Each write stays within its own 1/kWrites of the volume: overlapping
    // writes in flight at once may land in either order (the test used to
    // let the longest ones overlap the next and failed now and then).
    uint64_t off = (static_cast<uint64_t>(i) * (vol / kWrites)) / 4096 * 4096;
    uint64_t len = std::min<uint64_t>(4096 * (1 + rng() % 48), vol / kWrites / 4096 * 4096);
    if (off + len > vol) len = vol - off;
    bufs.emplace_back(len);
    fill(bufs.back(), i + 1);
    std::memcpy(model.data() + off, bufs.back().data(), len);
    reqs[i].op = IoOp::write;
    reqs[i].offset = off;
    reqs[i].length = len;
    reqs[i].buffer = bufs.back().data();
  }
  ASSERT_EQ(run_batch(**sub, reqs), 0);
  // Read the whole volume back in odd-sized chunks.
  for (uint64_t off = 0; off < vol;) {
    uint64_t len = std::min<uint64_t>(vol - off, 4096 * (1 + rng() % 80));
    AlignedBuffer in(len);
    ASSERT_EQ(io(IoOp::read, off, in), 0);
    ASSERT_EQ(std::memcmp(in.data(), model.data() + off, len), 0) << "mismatch in [" << off << ", +" << len << ")";
    off += len;
  }
  // And the bytes sit where RAID-0 says, on the member files.
  const StripeMap& map = engine_->map();
  AlignedBuffer unit_buf(unit);
  for (uint64_t off = 0; off < vol; off += unit * 7) {
    StripePiece p = map.piece_at(off, unit);
    ASSERT_EQ(members_[p.member].pread_full(unit_buf.data(), unit, p.member_offset), 0);
    ASSERT_EQ(std::memcmp(unit_buf.data(), model.data() + off, unit), 0);
  }
}

RingOptions copy_inline() {
  RingOptions r;
  r.copy_inline = true;
  return r;
}
RingOptions sqpoll() {
  RingOptions r;
  r.sqpoll = true;
  r.sqpoll_idle_ms = 10;
  return r;
}
RingOptions one_entry_sq() {
  RingOptions r;
  r.sq_entries = 1;
  return r;
}

INSTANTIATE_TEST_SUITE_P(Modes, DataRoundTrip,
                         ::testing::Values(RoundTripMode{Scheduler::per_drive, {}, "Ring"},
                                           RoundTripMode{Scheduler::per_volume, {}, "Ring"},
                                           RoundTripMode{Scheduler::per_drive, copy_inline(), "CopyInline"},
                                           RoundTripMode{Scheduler::per_volume, copy_inline(), "CopyInline"},
                                           RoundTripMode{Scheduler::per_drive, sqpoll(), "Sqpoll"},
                                           RoundTripMode{Scheduler::per_volume, sqpoll(), "Sqpoll"},
                                           RoundTripMode{Scheduler::per_drive, one_entry_sq(), "OneEntrySq"},
                                           RoundTripMode{Scheduler::per_volume, one_entry_sq(), "OneEntrySq"},
                                           RoundTripMode{Scheduler::per_drive, {}, "RingOneThread", 1},
                                           RoundTripMode{Scheduler::per_drive, {}, "RingThreadEach", 4},
                                           RoundTripMode{Scheduler::per_drive, copy_inline(), "CopyInlineOneThread", 1},
                                           RoundTripMode{Scheduler::per_volume, {}, "RingOneThread", 1}),
                         [](const auto& info) {
                           return std::string(info.param.scheduler == Scheduler::per_drive ? "PerDrive" : "PerVolume") +
                                  info.param.name;
                         });

// A failed inline copy reaches the request as its errno, like a failed
// ring IO: here every write to a member opened read-only fails with EBADF.
TEST_F(EngineFixture, CopyInlineFailureReachesTheRequest) {
  make_members(2, 1 << 20);
  std::vector<DriveSpec> drives = specs();
  std::vector<int> read_only;
  for (DriveSpec& d : drives) {
    read_only.push_back(::open(d.name.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    ASSERT_GE(read_only.back(), 0);
    d.fd = read_only.back();
    d.ring.copy_inline = true;
  }
  start(EngineConfig{}, 4096, std::move(drives));
  AlignedBuffer b(16384);
  fill(b, 3);
  EXPECT_EQ(io(IoOp::write, 0, b), -EBADF);
  // Reads still work, and return what the members hold (zeros).
  AlignedBuffer in(16384);
  fill(in, 4);
  ASSERT_EQ(io(IoOp::read, 0, in), 0);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(in.data()[i], std::byte{0}) << "byte " << i;
  engine_.reset();
  for (int fd : read_only) ::close(fd);
}

TEST_F(EngineFixture, RejectsMisalignedAndOutOfRangeRequests) {
  make_members(2, 1 << 20);
  start(EngineConfig{}, 4096, specs());
  AlignedBuffer b(8192);
  Request r;
  r.op = IoOp::read;
  r.buffer = b.data();
  r.on_complete = [](Request&, int) { FAIL() << "a refused request must not complete"; };
  auto sub = engine_->open_submitter();
  r.offset = 100;
  r.length = 4096;
  EXPECT_EQ((*sub)->add(r), -EINVAL);
  r.offset = 0;
  r.length = 1000;
  EXPECT_EQ((*sub)->add(r), -EINVAL);
  r.offset = engine_->map().volume_size() - 4096;
  r.length = 8192;
  EXPECT_EQ((*sub)->add(r), -EINVAL);
  r.offset = 0;
  r.length = 4096;
  r.buffer = b.data() + 512;
  EXPECT_EQ((*sub)->add(r), -EINVAL);
}

// Flushes, and one stripe unit (4 KiB, stripe unit 4096) written to each
// listed drive of a volume so striped.
class FlushFixture : public EngineFixture {
 protected:
  void write_units_to(std::initializer_list<uint32_t> drives) {
    AlignedBuffer b(4096);
    std::memset(b.data(), 0x5a, 4096);
    for (uint32_t d : drives) ASSERT_EQ(io(IoOp::write, uint64_t{d} * 4096, b), 0) << "drive " << d;
  }
  int flush() {
    AlignedBuffer none(0);
    return io(IoOp::flush, 0, none);
  }
};

TEST_F(FlushFixture, FlushReachesEveryDriveWrittenSinceItsLastFlush) {
  make_members(3, 1 << 20);
  start(EngineConfig{}, 4096, specs());
  write_units_to({0, 1, 2});
  EXPECT_EQ(flush(), 0);
  for (uint32_t d = 0; d < 3; ++d) {
    // The stats snapshot is published when the drive goes idle; the flush
    // completed, so each drive has counted it.
    DriveStats s = wait_stats(d, [](const DriveStats& s) { return s.flushes >= 1 && s.in_flight == 0; });
    EXPECT_EQ(s.flushes, 1u) << "drive " << d;
  }
}

// An fsync of a file that lives on one drive, or a journal commit, must not
// make every drive of the volume empty its write cache.
TEST_F(FlushFixture, FlushReachesOnlyTheDrivesWrittenSinceTheLastFlush) {
  make_members(4, 1 << 20);
  start(EngineConfig{}, 4096, specs());
  write_units_to({0, 1, 2, 3});
  ASSERT_EQ(flush(), 0);
  write_units_to({2});
  ASSERT_EQ(flush(), 0);
  // Nothing written since: a flush completes without reaching any drive.
  ASSERT_EQ(flush(), 0);
  // A read is no reason to flush either.
  AlignedBuffer b(4096);
  ASSERT_EQ(io(IoOp::read, 4096, b), 0);
  ASSERT_EQ(flush(), 0);
  for (uint32_t d = 0; d < 4; ++d) {
    const uint64_t want = d == 2 ? 2 : 1;
    DriveStats s = wait_stats(d, [&](const DriveStats& s) { return s.flushes >= want && s.in_flight == 0; });
    EXPECT_EQ(s.flushes, want) << "drive " << d;
  }
}

// The fdatasync after a small write: one drive needs a flush, and the
// calling thread makes it itself (Engine::flush_lone_drive), counted as
// that drive's flush and covering its writes, so that the next flush
// skips the drive. With two drives to flush it does nothing: those go
// through the rings, in parallel.
TEST_F(FlushFixture, ALoneDriveToFlushIsFlushedByTheCallingThread) {
  make_members(4, 1 << 20);
  start(EngineConfig{}, 4096, specs());
  write_units_to({0, 1});
  EXPECT_EQ(engine_->flush_lone_drive(), -EOPNOTSUPP);
  for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(engine_->stats(d).flushes, 0u) << "drive " << d;
  ASSERT_EQ(flush(), 0);
  write_units_to({2});
  EXPECT_EQ(engine_->flush_lone_drive(), 0);
  // Covered: neither way flushes drive 2 again.
  EXPECT_EQ(engine_->flush_lone_drive(), 0);
  ASSERT_EQ(flush(), 0);
  const uint64_t want[4] = {1, 1, 1, 0};
  for (uint32_t d = 0; d < 4; ++d) {
    DriveStats s = engine_->stats(d);
    EXPECT_EQ(s.flushes, want[d]) << "drive " << d;
    EXPECT_EQ(s.errors, 0u) << "drive " << d;
  }
}

}  // namespace
}  // namespace peregrine::testing
