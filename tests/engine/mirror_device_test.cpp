// A member mirrored onto a new one while the engine serves IO (the engine
// side of an online replace: Engine::install_mirror, MirrorDevice,
// MirrorFence). The copy here is the test's own, done as the daemon's
// copier does it: fence a chunk, read the old member, write the new one,
// release.
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <thread>

#include "engine_fixture.h"
#include "peregrine/backend/mirror_device.h"

namespace peregrine::testing {
namespace {

constexpr uint64_t kUnit = 16384;           // stripe unit
constexpr uint64_t kMemberBytes = 4 << 20;  // per member
constexpr uint64_t kBlock = 4096;
constexpr uint64_t kChunk = 256 << 10;  // the copier's

class MirrorDeviceTest : public EngineFixture {
 protected:
  void SetUp() override {
    make_members(2, kMemberBytes);
    start(EngineConfig{}, kUnit, specs());
    // Every block of the volume stamped, so that a block the copy missed
    // shows on the new member.
    stamps_.assign(2 * kMemberBytes / kBlock, 0);
    AlignedBuffer b(1 << 20);
    for (uint64_t off = 0; off < 2 * kMemberBytes; off += b.size()) {
      for (uint64_t k = 0; k < b.size() / kBlock; ++k) stamp(b, k * kBlock, stamp_of(off / kBlock + k, 0));
      ASSERT_EQ(io(IoOp::write, off, b), 0);
      for (uint64_t k = 0; k < b.size() / kBlock; ++k) stamps_[off / kBlock + k] = stamp_of(off / kBlock + k, 0);
    }
    // The new member: a file as large as the old one, zeros.
    new_path_ = dir_ + "/new";
    int fd = ::open(new_path_.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMemberBytes)), 0);
    ::close(fd);
    auto m = MemberFile::open(new_path_, MemberFile::Mode::read_write);
    ASSERT_TRUE(m) << m.status().message();
    new_member_.emplace(std::move(*m));
  }
  void TearDown() override {
    engine_.reset();
    new_member_.reset();
    EngineFixture::TearDown();
  }

  void install() {
    DriveSpec spec;
    spec.name = new_path_;
    spec.fd = new_member_->fd();
    spec.queue_depth = 32;
    auto ring = UringDeviceFactory::open_ring(spec);
    ASSERT_TRUE(ring) << ring.status().message();
    ASSERT_TRUE(engine_->install_mirror(0, std::move(*ring), fence_));
  }

  static uint64_t stamp_of(uint64_t block, uint64_t seq) { return (seq << 32) | block; }
  static void stamp(AlignedBuffer& b, uint64_t at, uint64_t value) {
    for (uint64_t i = 0; i < kBlock; i += 8) std::memcpy(b.data() + at + i, &value, 8);
  }
  static uint64_t stamp_at(const std::byte* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  // Member 0's byte `m` is the volume's: units alternate between the two members.
  static uint64_t volume_offset_of_member0(uint64_t m) { return (m / kUnit) * 2 * kUnit + m % kUnit; }

  std::vector<std::byte> whole(const MemberFile& f) {
    AlignedBuffer b(kMemberBytes);
    EXPECT_EQ(f.pread_full(b.data(), kMemberBytes, 0), 0);
    return std::vector<std::byte>(b.data(), b.data() + kMemberBytes);
  }

  std::string new_path_;
  std::optional<MemberFile> new_member_;
  std::shared_ptr<MirrorFence> fence_ = std::make_shared<MirrorFence>();
  std::vector<uint64_t> stamps_;  // per volume block: what it should hold
};

// Two writers (one through the rings, one through the blocking path) write
// while the copy runs; half their writes aim at the chunk being copied.
// After each chunk is read from the old member, the copier waits until
// every writer has sent a write since (one through the ring aimed at the
// fenced chunk waits for the release; a blocking one lands at once and
// makes the copier copy the chunk again), then writes the chunk to the new
// member: without the fence, such a write would land on both members first
// and the copy's older bytes over it on the new one.
TEST_F(MirrorDeviceTest, WritesDuringTheCopyReachTheNewMemberAndTheCopyNeverOvertakesThem) {
  install();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> fenced_chunk{UINT64_MAX};
  std::atomic<uint64_t> sent[2] = {0, 0};
  std::atomic<uint64_t> aim[2] = {UINT64_MAX, UINT64_MAX};  // the block of the write being sent
  std::atomic<int> failures{0};
  auto writer = [&](int w) {
    std::mt19937_64 rng(7 + w);
    auto sub = engine_->open_submitter();
    AlignedBuffer b(kBlock);
    for (uint64_t seq = 1; !stop.load(); ++seq) {
      uint64_t block = 0;
      const uint64_t chunk = fenced_chunk.load();
      if (chunk != UINT64_MAX && rng() % 2 == 0) {
        const uint64_t m = chunk + (rng() % (kChunk / kBlock)) * kBlock;
        block = volume_offset_of_member0(m) / kBlock;
      } else {
        block = rng() % stamps_.size();
      }
      block = block / 2 * 2 + static_cast<uint64_t>(w);  // each writer its own blocks
      stamp(b, 0, stamp_of(block, seq));
      aim[w].store(block);
      sent[w].fetch_add(1);
      int rc = 0;
      if (w == 0) {
        Request r = request_for(IoOp::write, block * kBlock, b);
        Waiter waiter;
        waiter.arm(r);
        rc = (*sub)->submit(r);
        if (rc == 0) waiter.wait(), rc = waiter.result.load();
      } else {
        rc = engine_->transfer_lone_piece(IoOp::write, block * kBlock, b.data(), kBlock);
      }
      if (rc != 0) failures.fetch_add(1);
      stamps_[block] = stamp_of(block, seq);
      aim[w].store(UINT64_MAX);
    }
  };
  std::thread w0(writer, 0), w1(writer, 1);

  AlignedBuffer chunk(kChunk);
  uint64_t recopies = 0;
  for (uint64_t c = 0; c < kMemberBytes;) {
    fence_->fence(c, c + kChunk);
    fenced_chunk.store(c);
    ASSERT_EQ(members_[0].pread_full(chunk.data(), kChunk, c), 0);
    // Each writer sends a write after the read, or is held at the fence
    // with one through the ring aimed at this chunk (which waits for the
    // release).
    auto aims_here = [&](uint64_t block) {
      if (block == UINT64_MAX || (block * kBlock / kUnit) % 2 != 0) return false;
      const uint64_t m = (block * kBlock / kUnit / 2) * kUnit + block * kBlock % kUnit;
      return m >= c && m < c + kChunk;
    };
    for (int w = 0; w < 2; ++w) {
      const uint64_t seen = sent[w].load();
      while (sent[w].load() == seen && !aims_here(aim[w].load())) std::this_thread::yield();
    }
    ASSERT_EQ(new_member_->pwrite_full(chunk.data(), kChunk, c), 0);
    fenced_chunk.store(UINT64_MAX);
    if (fence_->release()) {
      ++recopies;  // a blocking write met the fence: the same chunk again
    } else {
      c += kChunk;
    }
  }
  std::printf("chunks copied again after a blocking write: %llu\n", static_cast<unsigned long long>(recopies));
  stop.store(true);
  w0.join();
  w1.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fence_->secondary_error(), 0);

  // The new member is the old one's copy, and both hold every write.
  std::vector<std::byte> old_bytes = whole(members_[0]);
  std::vector<std::byte> new_bytes = whole(*new_member_);
  size_t differing = 0;
  for (uint64_t m = 0; m < kMemberBytes; m += kBlock) {
    const uint64_t want = stamps_[volume_offset_of_member0(m) / kBlock];
    EXPECT_EQ(stamp_at(old_bytes.data() + m), want) << "old member, offset " << m;
    if (std::memcmp(old_bytes.data() + m, new_bytes.data() + m, kBlock) != 0) ++differing;
  }
  EXPECT_EQ(differing, 0u) << "blocks where the new member differs from the old";
}

TEST_F(MirrorDeviceTest, AfterTheSwitchTheNewMemberAloneServesTheDrive) {
  install();
  AlignedBuffer all(kMemberBytes);
  ASSERT_EQ(members_[0].pread_full(all.data(), kMemberBytes, 0), 0);
  ASSERT_EQ(new_member_->pwrite_full(all.data(), kMemberBytes, 0), 0);
  fence_->flush_both();
  fence_->set_mode(MirrorMode::secondary_only);
  fence_->wait_retired();

  // Member 0's unit 3 holds volume unit 6.
  const uint64_t off = 6 * kUnit;
  AlignedBuffer b(kBlock);
  stamp(b, 0, 0xfeed);
  ASSERT_EQ(io(IoOp::write, off, b), 0);
  ASSERT_EQ(engine_->transfer_lone_piece(IoOp::write, off + kBlock, b.data(), kBlock), 0);
  std::vector<std::byte> on_new = whole(*new_member_);
  std::vector<std::byte> on_old = whole(members_[0]);
  for (uint64_t at : {3 * kUnit, 3 * kUnit + kBlock}) {
    EXPECT_EQ(stamp_at(on_new.data() + at), 0xfeedu);
    EXPECT_EQ(stamp_at(on_old.data() + at), stamp_of((at == 3 * kUnit ? off : off + kBlock) / kBlock, 0));
  }
  // Reads come from the new member: change it behind the engine's back.
  stamp(b, 0, 0xbeef);
  ASSERT_EQ(new_member_->pwrite_full(b.data(), kBlock, 3 * kUnit), 0);
  AlignedBuffer r(kBlock);
  ASSERT_EQ(io(IoOp::read, off, r), 0);
  EXPECT_EQ(stamp_at(r.data()), 0xbeefu);
  ASSERT_EQ(engine_->transfer_lone_piece(IoOp::read, off, r.data(), kBlock), 0);
  EXPECT_EQ(stamp_at(r.data()), 0xbeefu);
  AlignedBuffer none(0);
  EXPECT_EQ(io(IoOp::flush, 0, none), 0);
}

TEST_F(MirrorDeviceTest, AReplaceThatGivesUpLeavesTheOldMemberAloneAndTheNewOneUntouched) {
  install();
  AlignedBuffer b(kBlock);
  stamp(b, 0, 0xaaaa);
  ASSERT_EQ(io(IoOp::write, 0, b), 0);  // mirrored
  fence_->set_mode(MirrorMode::primary_only);
  fence_->wait_retired();
  stamp(b, 0, 0xbbbb);
  ASSERT_EQ(io(IoOp::write, kBlock, b), 0);
  ASSERT_EQ(engine_->transfer_lone_piece(IoOp::write, 2 * kBlock, b.data(), kBlock), 0);
  std::vector<std::byte> on_new = whole(*new_member_);
  std::vector<std::byte> on_old = whole(members_[0]);
  EXPECT_EQ(stamp_at(on_new.data()), 0xaaaau);
  EXPECT_EQ(stamp_at(on_old.data()), 0xaaaau);
  for (uint64_t at : {kBlock, 2 * kBlock}) {
    EXPECT_EQ(stamp_at(on_old.data() + at), 0xbbbbu);
    EXPECT_EQ(stamp_at(on_new.data() + at), 0u) << "the new member got a write after the replace gave up";
  }
}

}  // namespace
}  // namespace peregrine::testing
