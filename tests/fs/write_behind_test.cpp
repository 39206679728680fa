// WriteBehind's waits (write_behind.h): an fsync that completes the IO it
// waits for itself (reap_here) returns with no other thread's help and
// takes the IO's error; waits not asked to reap never do; an fsync whose
// reaping finds nothing still returns once another thread completes the
// IO; a file's bytes in flight.
#include "write_behind.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace peregrine::fs {
namespace {

constexpr uint64_t kIno = 42;
constexpr uint64_t kLongNs = 3600ull * 1000000000;  // longer than any test

TEST(WriteBehindTest, AnFsyncCompletesTheWriteItWaitsForItselfAndTakesItsError) {
  WriteBehind* self = nullptr;
  int reaps = 0;
  WriteBehind wb(1 << 20, {}, [&] {
    // What a drive's callback does when this thread reaps the member IO.
    if (++reaps == 3) self->done(kIno, 0, 1, -EIO);
  }, kLongNs);
  self = &wb;
  ASSERT_TRUE(wb.admit(kIno, 0, 1, 4096));
  EXPECT_EQ(wb.wait_file(kIno, true, true), -EIO);
  EXPECT_EQ(reaps, 3);
  EXPECT_TRUE(wb.idle());
  EXPECT_EQ(wb.wait_file(kIno, true, true), 0);  // reported once
  EXPECT_EQ(reaps, 3);                           // nothing to wait for: no reap
}

TEST(WriteBehindTest, WaitsNotAskedToReapNeverReap) {
  std::atomic<int> reaps{0};
  WriteBehind wb(1 << 20, {}, [&] { reaps.fetch_add(1); }, kLongNs);
  ASSERT_TRUE(wb.admit(kIno, 0, 1, 4096));
  std::atomic<bool> waiting{false};
  std::thread completer([&] {
    waiting.wait(false);
    wb.done(kIno, 0, 1, 0);
  });
  waiting.store(true);
  waiting.notify_one();
  EXPECT_EQ(wb.wait_file(kIno, false), 0);
  completer.join();
  EXPECT_EQ(reaps.load(), 0);
}

TEST(WriteBehindTest, AnFsyncWhoseReapFindsNothingReturnsOnceAnotherThreadCompletes) {
  std::atomic<int> reaps{0};
  WriteBehind wb(1 << 20, {}, [&] {
    reaps.fetch_add(1);
    reaps.notify_one();
  }, 1000);  // 1 us of reaping, then the sleep
  ASSERT_TRUE(wb.admit(kIno, 0, 1, 4096));
  std::thread completer([&] {
    reaps.wait(0);  // the fsync has begun to wait
    wb.done(kIno, 0, 1, 0);
  });
  EXPECT_EQ(wb.wait_file(kIno, true, true), 0);
  completer.join();
  EXPECT_GE(reaps.load(), 1);
  EXPECT_TRUE(wb.idle());
}

// What admit() says of a write of `ino`: whether its file is among those
// fsync'd lately.
bool fsynced_lately(WriteBehind& wb, uint64_t ino) {
  bool lately = false;
  EXPECT_TRUE(wb.admit(ino, 0, 1, 4096, &lately));
  wb.done(ino, 0, 1, 0);
  return lately;
}

// pending_bytes: what an fsync of the file would still wait for (a ring
// runs a short one itself, fs_context.h): that file's writes in flight
// only, each counted until it is done.
TEST(WriteBehindTest, PendingBytesCountOneFilesWritesUntilTheyAreDone) {
  WriteBehind wb(1 << 20, {});
  EXPECT_EQ(wb.pending_bytes(kIno), 0u);
  ASSERT_TRUE(wb.admit(kIno, 0, 8192, 8192));
  ASSERT_TRUE(wb.admit(kIno, 65536, 69632, 69000));
  ASSERT_TRUE(wb.admit(kIno + 1, 0, 4096, 4096));
  EXPECT_EQ(wb.pending_bytes(kIno), 12288u);
  EXPECT_EQ(wb.pending_bytes(kIno + 1), 4096u);
  EXPECT_EQ(wb.pending_bytes(kIno + 2), 0u);
  wb.done(kIno, 0, 8192, 0);
  EXPECT_EQ(wb.pending_bytes(kIno), 4096u);
  wb.done(kIno, 65536, 69632, 0);
  EXPECT_EQ(wb.pending_bytes(kIno), 0u);
  EXPECT_EQ(wb.pending_bytes(kIno + 1), 4096u);
}

TEST(WriteBehindTest, FilesAnFsyncWaitedForLatelyAreKnownUntilEightOthersFollow) {
  WriteBehind wb(1 << 20, {});
  EXPECT_FALSE(fsynced_lately(wb, kIno));
  wb.note_fsync(kIno);
  EXPECT_TRUE(fsynced_lately(wb, kIno));
  wb.note_fsync(kIno);  // again: still one place
  for (uint64_t other = 1; other <= 7; ++other) wb.note_fsync(kIno + other);
  EXPECT_TRUE(fsynced_lately(wb, kIno)) << "forgotten before eight others followed";
  wb.note_fsync(kIno + 8);
  EXPECT_FALSE(fsynced_lately(wb, kIno));
  EXPECT_TRUE(fsynced_lately(wb, kIno + 8));
}

TEST(WriteBehindTest, AFileFsyncedAgainIsKeptBeforeOnesFsyncedOnce) {
  WriteBehind wb(1 << 20, {});
  for (uint64_t other = 0; other < 8; ++other) {
    wb.note_fsync(other == 0 ? kIno : kIno + other);
    wb.note_fsync(kIno);  // a database committing between the others
  }
  wb.note_fsync(kIno + 100);  // the oldest of the others gives way, not kIno
  EXPECT_TRUE(fsynced_lately(wb, kIno));
  EXPECT_FALSE(fsynced_lately(wb, kIno + 1));
}

}  // namespace
}  // namespace peregrine::fs
