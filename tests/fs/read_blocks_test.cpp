// ReadBlocks (read_blocks.h): a kept block answers only a read that names
// the same inode, block, volume offset and write generation, with the bytes
// asked for; a block that shares its slot replaces it; nothing is kept
// with generation 0 or when there are no slots; and readers racing a
// keeper of the same slot only ever copy out one whole block (engine:
// under TSan too).
#include "read_blocks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace peregrine::fs {
namespace {

constexpr uint64_t kBlock = ReadBlocks::kBlock;

std::vector<std::byte> block_of(unsigned char v) { return std::vector<std::byte>(kBlock, std::byte{v}); }

TEST(ReadBlocksTest, AKeptBlockAnswersOnlyTheSameBlockVolumeOffsetAndGeneration) {
  ReadBlocks blocks(64);
  std::vector<std::byte> b = block_of(0);
  for (size_t i = 0; i < kBlock; ++i) b[i] = std::byte(i * 7);
  blocks.keep(5, 8192, 1 << 20, 3, b.data());
  std::byte out[100];
  ASSERT_TRUE(blocks.copy(5, 8192, 1 << 20, 3, 1000, 100, out));
  EXPECT_EQ(std::memcmp(out, b.data() + 1000, 100), 0);
  EXPECT_FALSE(blocks.copy(5, 8192, 1 << 20, 4, 0, 10, out)) << "a newer generation";
  EXPECT_FALSE(blocks.copy(5, 8192, 2 << 20, 3, 0, 10, out)) << "the block moved on the volume";
  EXPECT_FALSE(blocks.copy(6, 8192, 1 << 20, 3, 0, 10, out)) << "another inode";
  EXPECT_FALSE(blocks.copy(5, 4096, 1 << 20, 3, 0, 10, out)) << "another block";
  EXPECT_FALSE(blocks.copy(5, 8192, 1 << 20, 0, 0, 10, out)) << "no generation";
  EXPECT_FALSE(blocks.copy(5, 8192, 1 << 20, 3, kBlock - 10, 11, out)) << "past the block";
  EXPECT_EQ(blocks.counts().hits, 1u);
  EXPECT_EQ(blocks.counts().kept, 1u);
}

TEST(ReadBlocksTest, NothingIsKeptWithoutSlotsOrWithoutAGeneration) {
  std::vector<std::byte> b = block_of(1);
  std::byte out[8];
  ReadBlocks none(0);
  EXPECT_FALSE(none.enabled());
  none.keep(5, 0, 0, 3, b.data());
  EXPECT_FALSE(none.copy(5, 0, 0, 3, 0, 8, out));
  ReadBlocks blocks(4);
  blocks.keep(5, 0, 0, 0, b.data());
  EXPECT_FALSE(blocks.copy(5, 0, 0, 0, 0, 8, out));
  EXPECT_EQ(blocks.counts().kept, 0u);
}

// One slot: the newest block kept wins it, the older one answers no more.
TEST(ReadBlocksTest, ABlockThatSharesASlotReplacesTheOlderOne) {
  ReadBlocks blocks(1);
  std::vector<std::byte> a = block_of('a'), b = block_of('b');
  blocks.keep(5, 0, 4096, 2, a.data());
  blocks.keep(9, 4096, 8192, 2, b.data());
  std::byte out[4];
  EXPECT_FALSE(blocks.copy(5, 0, 4096, 2, 0, 4, out));
  ASSERT_TRUE(blocks.copy(9, 4096, 8192, 2, 0, 4, out));
  EXPECT_EQ(out[0], std::byte{'b'});
}

// Keepers replace one slot's block over and over while readers copy from
// it: every copy is one block's bytes, never a mix of two.
TEST(ReadBlocksTest, ReadersRacingAKeeperCopyOneWholeBlock) {
  ReadBlocks blocks(1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> mixed{0}, copies{0};
  std::atomic<bool> kept{false};
  std::thread keeper([&] {
    for (unsigned v = 0; !stop.load(); ++v) {
      std::vector<std::byte> b = block_of(static_cast<unsigned char>(v));
      blocks.keep(5, 0, 4096, 7, b.data());
      kept.store(true);
    }
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      // Not before the first block is kept: on a busy machine the readers
      // could otherwise run all their rounds before the keeper starts (CI
      // saw 0 copies once).
      while (!kept.load()) std::this_thread::yield();
      std::vector<std::byte> out(kBlock);
      for (int i = 0; i < 20000; ++i) {
        if (!blocks.copy(5, 0, 4096, 7, 0, kBlock, out.data())) continue;
        ++copies;
        for (size_t k = 1; k < kBlock; ++k) {
          if (out[k] != out[0]) {
            ++mixed;
            break;
          }
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  stop = true;
  keeper.join();
  EXPECT_GT(copies.load(), 0u);
  EXPECT_EQ(mixed.load(), 0u);
}

}  // namespace
}  // namespace peregrine::fs
