// util/aligned_buffer.h: the one O_DIRECT buffer. Alignment and zero fill
// as made, reserve() growing only (a pooled op keeps its room), and moves
// handing the memory over.
#include "peregrine/util/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace peregrine {
namespace {

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(AlignedBuffer, IsAlignedAndZeroFilledToItsRoundedSize) {
  AlignedBuffer b(5000);
  ASSERT_TRUE(aligned(b.data(), 4096));
  EXPECT_EQ(b.size(), 5000u);
  EXPECT_EQ(b.capacity(), 8192u);
  for (size_t i = 0; i < b.capacity(); ++i) ASSERT_EQ(b.data()[i], std::byte{0}) << "byte " << i;
  AlignedBuffer small(100, 512);
  EXPECT_TRUE(aligned(small.data(), 512));
  EXPECT_EQ(small.capacity(), 512u);
}

TEST(AlignedBuffer, ReserveGrowsOnlyAndKeepsTheRoomItHas) {
  AlignedBuffer b;
  EXPECT_EQ(b.capacity(), 0u);
  b.reserve(1 << 20);
  ASSERT_TRUE(aligned(b.data(), 4096));
  const std::byte* room = b.data();
  EXPECT_EQ(b.capacity(), size_t{1} << 20);
  b.reserve(4096);
  EXPECT_EQ(b.data(), room) << "a smaller request reallocated";
  EXPECT_EQ(b.size(), 4096u);
  EXPECT_EQ(b.capacity(), size_t{1} << 20);
  b.reserve(3 << 20);
  EXPECT_EQ(b.capacity(), size_t{3} << 20);
  EXPECT_TRUE(aligned(b.data(), 4096));
}

TEST(AlignedBuffer, MoveHandsTheMemoryOver) {
  auto a = AlignedBuffer::uninitialised(4096);
  a.data()[7] = std::byte{0x5a};
  const std::byte* room = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), room);
  EXPECT_EQ(b.data()[7], std::byte{0x5a});
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.capacity(), 0u);
  AlignedBuffer c(8192);
  c = std::move(b);
  EXPECT_EQ(c.data(), room);
  EXPECT_EQ(c.size(), 4096u);
  EXPECT_EQ(c.capacity(), 4096u);
}

}  // namespace
}  // namespace peregrine
