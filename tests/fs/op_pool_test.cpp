// OpPool: ops come back with their buffers, large ones included (a fresh
// large buffer faults in every page on first touch), and the idle pool
// stays bounded.
#include "op_pool.h"

#include <gtest/gtest.h>

#include "peregrine/util/aligned_buffer.h"

namespace peregrine::fs {
namespace {

struct TestOp {
  AlignedBuffer buffer;
};

TEST(OpPool, ALargeBufferIsReusedByTheNextLargeRequest) {
  OpPool<TestOp> pool(4, 2);
  TestOp* op = pool.get(1 << 20);
  op->buffer.reserve(1 << 20);
  std::byte* data = op->buffer.data();
  pool.put(op);
  TestOp* again = pool.get(1 << 20);
  EXPECT_EQ(again, op);
  again->buffer.reserve(1 << 20);
  EXPECT_EQ(again->buffer.data(), data) << "the 1 MiB buffer was allocated again";
  pool.put(again);
}

TEST(OpPool, SmallRequestsTakeSmallOpsFirst) {
  OpPool<TestOp> pool(4, 2);
  TestOp* big = pool.get(1 << 20);
  big->buffer.reserve(1 << 20);
  TestOp* small = pool.get(4096);
  small->buffer.reserve(4096);
  pool.put(big);
  pool.put(small);
  EXPECT_EQ(pool.get(4096), small);
  EXPECT_EQ(pool.get(1 << 20), big);
  delete small;
  delete big;
}

TEST(OpPool, IdleOpsBeyondTheBoundAreFreed) {
  OpPool<TestOp> pool(1, 1);
  TestOp* a = pool.get(1 << 20);
  TestOp* b = pool.get(1 << 20);
  a->buffer.reserve(1 << 20);
  b->buffer.reserve(1 << 20);
  pool.put(a);
  pool.put(b);  // the large list holds one: b is freed, not kept
  EXPECT_EQ(pool.get(1 << 20), a);
  TestOp* fresh = pool.get(1 << 20);
  EXPECT_EQ(fresh->buffer.capacity(), 0u) << "a freed op came back";
  delete a;
  delete fresh;
}

TEST(OpPool, BuffersLargerThanAnyRequestAreNotKept) {
  OpPool<TestOp> pool(4, 4);
  TestOp* huge = pool.get(8 << 20);
  huge->buffer.reserve(8 << 20);
  pool.put(huge);
  TestOp* next = pool.get(8 << 20);
  EXPECT_EQ(next->buffer.capacity(), 0u);
  delete next;
}

}  // namespace
}  // namespace peregrine::fs
