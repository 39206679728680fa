// Many threads at once: namespace ops, writes completed from "IO threads",
// fsync group commit and background commits, then the state must survive a
// crash image and remount intact (everything fsync'd present, space
// consistent). Deterministic checks only: no sleeps, no timing.
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

using test::mount_ok;
using test::new_volume;
using test::small_geometry;

TEST(Concurrency, ParallelOpsFsyncAndCompletionsStayConsistent) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  Options o = test::test_options();
  o.journal_size = 256 * 1024;         // several checkpoints happen on the way
  o.pending_commit_bytes = 16 * 1024;  // background commits kick in too
  auto md = mount_ok(*io, g, o);
  ASSERT_NE(md, nullptr);
  constexpr int kThreads = 4;
  constexpr int kFiles = 60;
  std::vector<InodeAttr> dirs(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(md->mkdir(kRootIno, test::cat("t", t), 0755, Cred{}, &dirs[t]), 0);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Ino dir = dirs[t].ino;
      for (int i = 0; i < kFiles; ++i) {
        InodeAttr a;
        const std::string name = test::cat("f", i);
        if (md->create(dir, name, 0644, Cred{}, &a) != 0) ++failures;
        std::vector<WriteRange> w;
        if (md->prepare_write(a.ino, 0, 3 * 4096, &w) != 0) ++failures;
        // Completion from another thread, like an IO completion.
        std::thread io_thread([&] {
          if (md->complete_write(a.ino, w, 3 * 4096) != 0) ++failures;
        });
        io_thread.join();
        if (i % 3 == 0 && md->fsync(a.ino) != 0) ++failures;
        if (i % 5 == 0) {
          if (md->unlink(dir, name) != 0) ++failures;  // still open: orphan
        } else if (i % 7 == 0) {
          if (md->rename(dir, name, kRootIno, test::cat("moved-", t) + "-" + name, 0) != 0) ++failures;
        }
        if (md->release(a.ino) != 0) ++failures;
        std::vector<DirEntry> list;
        if (md->readdir(dir, 0, 1000, &list) != 0) ++failures;
        StatFs s;
        if (md->statfs(&s) != 0) ++failures;
      }
      if (md->sync() != 0) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const std::string live = md->dump();
  test::expect_space_consistent(live, md->free_map(), g);
  // Everything was synced: a crash now loses nothing.
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  md.reset();
  auto md2 = mount_ok(*img, g, o);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->dump(), live);
  test::expect_space_consistent(md2->dump(), md2->free_map(), g);
  // Expected survivors per thread: files not unlinked.
  for (int t = 0; t < kThreads; ++t) {
    std::vector<DirEntry> list;
    ASSERT_EQ(md2->readdir(dirs[t].ino, 0, 1000, &list), 0);
    int want = 0;
    for (int i = 0; i < kFiles; ++i) want += (i % 5 != 0 && i % 7 != 0);
    EXPECT_EQ(static_cast<int>(list.size()), want);
  }
}

}  // namespace
}  // namespace peregrine::meta
