// TailBlocks (src/fs/tail_blocks.h): a write inside a file's tail block
// patches it and nothing else; the write-back pass puts dirty tails on the
// volume and flushes before it returns, drops tails whose block left their
// file without writing them, and drops clean ones after two idle passes; a
// failed write-back keeps the bytes for the next pass. And under
// concurrency (TSan): a writer patching while passes write back loses no
// byte. Files sharing the lock-free filter's bucket keep their own tails.
#include "tail_blocks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "peregrine/meta/memory_volume_io.h"

namespace peregrine::fs {
namespace {

constexpr uint64_t kBlock = TailBlocks::kBlock;
constexpr uint64_t kIno = 7;
constexpr uint64_t kFileOff = 3 * kBlock;
constexpr uint64_t kVolOff = 40 * kBlock;

std::vector<std::byte> block_of(char c) { return std::vector<std::byte>(kBlock, std::byte(c)); }

std::vector<std::byte> read_block(VolumeIo& io, uint64_t off) {
  std::vector<std::byte> b(kBlock);
  EXPECT_EQ(io.read(off, b), 0);
  return b;
}

bool always_mapped(uint64_t, uint64_t, uint64_t) { return true; }

const std::byte* bytes(const char* s) { return reinterpret_cast<const std::byte*>(s); }

TEST(TailBlocksTest, AbsorbPatchesOnlyInsideItsFilesTailBlock) {
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a');
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  EXPECT_TRUE(tails.absorb(kIno, kFileOff + 10, kVolOff, bytes("xyz"), 3));
  EXPECT_FALSE(tails.absorb(kIno, kFileOff + kBlock - 2, kVolOff, bytes("xyz"), 3)) << "crosses the block's end";
  EXPECT_FALSE(tails.absorb(kIno, kFileOff - 1, kVolOff, bytes("x"), 1)) << "before the block";
  EXPECT_FALSE(tails.absorb(kIno + 1, kFileOff, kVolOff, bytes("x"), 1)) << "another file";
  EXPECT_FALSE(tails.absorb(kIno, kFileOff, kVolOff + kBlock, bytes("x"), 1)) << "the block moved";

  std::vector<std::byte> got(kBlock);
  uint64_t at = 0;
  ASSERT_TRUE(tails.copy_if_inside(kIno, 0, 4 * kBlock, &at, got.data()));
  EXPECT_EQ(at, kFileOff);
  a[10] = std::byte('x'), a[11] = std::byte('y'), a[12] = std::byte('z');
  EXPECT_EQ(got, a);
  EXPECT_FALSE(tails.copy_if_inside(kIno, 0, 3 * kBlock, &at, got.data())) << "the range ends before the block";
  EXPECT_TRUE(tails.overlaps(kIno, kFileOff + kBlock - 1, kFileOff + kBlock));
  EXPECT_FALSE(tails.overlaps(kIno, kFileOff + kBlock, kFileOff + 2 * kBlock));
  EXPECT_EQ(tails.counts().absorbed, 1u);
}

TEST(TailBlocksTest, WriteBackAllMakesDirtyTailsDurableBeforeItReturns) {
  meta::MemoryVolumeIo io(64 * kBlock);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a');
  ASSERT_EQ(io.write(kVolOff, a), 0);
  ASSERT_EQ(io.flush(), 0);
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_TRUE(tails.absorb(kIno, kFileOff, kVolOff, bytes("new"), 3));
  EXPECT_EQ(read_block(io, kVolOff), a) << "an absorbed write reached the volume at once";
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);
  a[0] = std::byte('n'), a[1] = std::byte('e'), a[2] = std::byte('w');
  auto durable = io.crash_image(meta::MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  EXPECT_EQ(read_block(*durable, kVolOff), a) << "written back but not flushed";
  EXPECT_EQ(tails.counts().written_back, 1u);
  EXPECT_EQ(tails.counts().live, 1u) << "a tail just written back stays";
}

TEST(TailBlocksTest, TailWhoseBlockLeftItsFileIsDroppedUnwritten) {
  meta::MemoryVolumeIo io(64 * kBlock);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a'), other = block_of('o');
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_TRUE(tails.absorb(kIno, kFileOff, kVolOff, bytes("new"), 3));
  // The file was unlinked and its block now holds another file's bytes.
  ASSERT_EQ(io.write(kVolOff, other), 0);
  ASSERT_EQ(tails.write_back_all(io, [](uint64_t, uint64_t, uint64_t) { return false; }), 0);
  EXPECT_EQ(read_block(io, kVolOff), other);
  EXPECT_EQ(tails.counts().live, 0u);
  EXPECT_FALSE(tails.absorb(kIno, kFileOff, kVolOff, bytes("x"), 1));
}

TEST(TailBlocksTest, CleanTailGoesAfterTwoIdlePassesAndAnAbsorbKeepsItAlive) {
  meta::MemoryVolumeIo io(64 * kBlock);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a');
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);
  ASSERT_TRUE(tails.absorb(kIno, kFileOff, kVolOff, bytes("b"), 1));  // idle passes back to 0
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);              // writes it back
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);              // idle 1
  EXPECT_EQ(tails.counts().live, 1u);
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);  // idle 2: dropped
  EXPECT_EQ(tails.counts().live, 0u);
  EXPECT_FALSE(tails.absorb(kIno, kFileOff, kVolOff, bytes("c"), 1)) << "absorbed into a dropped tail";
  EXPECT_EQ(read_block(io, kVolOff)[0], std::byte('b'));
}

TEST(TailBlocksTest, WriteBackAndDropLeavesTheBytesOnTheVolumeAndNoTail) {
  meta::MemoryVolumeIo io(64 * kBlock);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a');
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_EQ(tails.write_back_and_drop(kIno, io), 0);
  EXPECT_EQ(tails.counts().written_back, 0u) << "a clean tail was written";
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_TRUE(tails.absorb(kIno, kFileOff + 1, kVolOff, bytes("z"), 1));
  bool waited = false;
  ASSERT_EQ(tails.write_back_and_drop(kIno, io, &waited), 0);
  EXPECT_FALSE(waited) << "nobody else was writing it back";
  EXPECT_EQ(tails.counts().written_back, 1u);
  EXPECT_EQ(read_block(io, kVolOff)[1], std::byte('z'));
  EXPECT_FALSE(tails.overlaps(kIno, 0, UINT64_MAX));
}

TEST(TailBlocksTest, AtMostMaxBlocksLiveAndZeroKeepsNone) {
  TailBlocks two(2), none(0);
  std::vector<std::byte> a = block_of('a');
  for (uint64_t ino = 1; ino <= 3; ++ino) two.keep(ino, 0, ino * kBlock, a.data());
  EXPECT_EQ(two.counts().live, 2u);
  EXPECT_FALSE(two.absorb(3, 0, 3 * kBlock, bytes("x"), 1));
  none.keep(1, 0, kBlock, a.data());
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.empty());
}

// Files whose inode numbers share the lock-free "no tail here" filter: each
// keeps its own tail, and dropping one leaves the other found.
TEST(TailBlocksTest, FilesSharingAFilterBucketKeepTheirOwnTails) {
  meta::MemoryVolumeIo io(64 * kBlock);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a'), b = block_of('b');
  const uint64_t other = kIno + 1024 * 1024;  // the same bucket for any power-of-two count up to 1 Mi
  EXPECT_FALSE(tails.overlaps(other, 0, UINT64_MAX));
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  EXPECT_FALSE(tails.overlaps(other, 0, UINT64_MAX)) << "a tail found for the other file of the bucket";
  tails.keep(other, 0, 2 * kBlock, b.data());
  ASSERT_EQ(tails.write_back_and_drop(kIno, io), 0);
  std::vector<std::byte> got(kBlock);
  uint64_t at = 1;
  ASSERT_TRUE(tails.copy_if_inside(other, 0, kBlock, &at, got.data()));
  EXPECT_EQ(at, 0u);
  EXPECT_EQ(got, b);
  EXPECT_FALSE(tails.overlaps(kIno, 0, UINT64_MAX));
}

// Writes fail until told otherwise.
class FailingIo final : public VolumeIo {
 public:
  explicit FailingIo(VolumeIo& io) : io_(io) {}
  uint64_t size() const override { return io_.size(); }
  int read(uint64_t off, std::span<std::byte> out) override { return io_.read(off, out); }
  int write(uint64_t off, std::span<const std::byte> data) override { return failing ? -EIO : io_.write(off, data); }
  int flush() override { return failing ? -EIO : io_.flush(); }
  bool failing = true;

 private:
  VolumeIo& io_;
};

TEST(TailBlocksTest, FailedWriteBackKeepsTheBytesForTheNextPass) {
  meta::MemoryVolumeIo mem(64 * kBlock);
  FailingIo io(mem);
  TailBlocks tails(8);
  std::vector<std::byte> a = block_of('a');
  tails.keep(kIno, kFileOff, kVolOff, a.data());
  ASSERT_TRUE(tails.absorb(kIno, kFileOff, kVolOff, bytes("q"), 1));
  EXPECT_EQ(tails.write_back_all(io, always_mapped), -EIO);
  EXPECT_EQ(tails.write_back_and_drop(kIno, io), -EIO);
  EXPECT_TRUE(tails.overlaps(kIno, kFileOff, kFileOff + 1)) << "dropped although its bytes were not written";
  io.failing = false;
  ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);
  EXPECT_EQ(read_block(mem, kVolOff)[0], std::byte('q'));
}

// A writer (holding the file's gate, as the daemon's does) appends one
// byte at a time: into the tail when it can, else as the daemon does, by
// read-modify-write of the block and a new tail. Write-back passes run all
// the while. Afterwards the volume holds every byte.
TEST(TailBlocksTest, WritesDuringWriteBackPassesAreNeverLost) {
  meta::MemoryVolumeIo io(64 * kBlock, false);
  TailBlocks tails(8);
  std::atomic<bool> done{false};
  std::thread passes([&] {
    while (!done.load()) ASSERT_EQ(tails.write_back_all(io, always_mapped), 0);
  });
  std::vector<std::byte> expected(kBlock, std::byte{0});
  uint64_t absorbed = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    const uint64_t at = i % kBlock;
    const std::byte b{static_cast<unsigned char>('A' + i % 26)};
    expected[at] = b;
    if (tails.absorb(kIno, kFileOff + at, kVolOff, &b, 1)) {
      ++absorbed;
      continue;
    }
    ASSERT_EQ(tails.write_back_and_drop(kIno, io), 0);
    std::vector<std::byte> block = read_block(io, kVolOff);
    block[at] = b;
    ASSERT_EQ(io.write(kVolOff, block), 0);
    tails.keep(kIno, kFileOff, kVolOff, block.data());
  }
  done = true;
  passes.join();
  ASSERT_EQ(tails.write_back_and_drop(kIno, io), 0);
  EXPECT_EQ(read_block(io, kVolOff), expected);
  EXPECT_GT(absorbed, 0u);
}

}  // namespace
}  // namespace peregrine::fs
