// Sort and neighbour merge: a 1 MiB request striped at 4 KiB over 4 drives
// becomes one IO per drive; the iovec and size limits cut IOs where they
// say; data still lands right.
#include "engine_fixture.h"
#include "resident_pages.h"

namespace peregrine::testing {
namespace {

struct MergeCase {
  uint32_t max_iovecs;
  uint32_t max_io_bytes;
  uint64_t expect_ios_per_drive;
};

class NeighbourMerge : public EngineFixture, public ::testing::WithParamInterface<MergeCase> {};

TEST_P(NeighbourMerge, OneMebibyteRequestMergesPerDrive) {
  make_members(4, 4 << 20);
  EngineConfig c;
  c.high_watermark = 1024;  // the whole request is one batch
  c.inline_dispatch = false;
  c.max_iovecs = GetParam().max_iovecs;
  c.max_io_bytes = GetParam().max_io_bytes;
  start(c, 4096, specs());
  AlignedBuffer out(1 << 20), in(1 << 20);
  fill(out, 99);
  ASSERT_EQ(io(IoOp::write, 1 << 20, out), 0);
  for (uint32_t d = 0; d < 4; ++d) {
    DriveStats s = wait_stats(d, [](const DriveStats& s) { return s.subios == 64 && s.in_flight == 0; });
    EXPECT_EQ(s.subios, 64u) << "drive " << d;
    EXPECT_EQ(s.ios, GetParam().expect_ios_per_drive) << "drive " << d;
    EXPECT_EQ(s.merged, 64u - GetParam().expect_ios_per_drive) << "drive " << d;
    EXPECT_EQ(s.bytes_written, 256u * 1024) << "drive " << d;
  }
  ASSERT_EQ(io(IoOp::read, 1 << 20, in), 0);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(Limits, NeighbourMerge,
                         ::testing::Values(MergeCase{64, 1 << 20, 1},    // one IO per drive
                                           MergeCase{16, 1 << 20, 4},    // iovec limit
                                           MergeCase{64, 64 << 10, 4},   // size limit
                                           MergeCase{1, 1 << 20, 64}));  // merging off

TEST_F(EngineFixture, ReadsAndWritesAndGapsDoNotMerge) {
  make_members(1, 1 << 20);
  EngineConfig c;
  c.high_watermark = 64;
  c.inline_dispatch = false;
  start(c, 4096, specs());
  // Three requests in one batch: [0,4K) write, [4K,8K) read (other
  // direction), [12K,16K) write (not contiguous): three IOs, no merge.
  AlignedBuffer a(4096), b(4096), d(4096);
  Request r[3];
  Waiter w[3];
  IoOp ops[3] = {IoOp::write, IoOp::read, IoOp::write};
  uint64_t offs[3] = {0, 4096, 12288};
  AlignedBuffer* bufs[3] = {&a, &b, &d};
  auto sub = engine_->open_submitter();
  for (int i = 0; i < 3; ++i) {
    r[i].op = ops[i];
    r[i].offset = offs[i];
    r[i].length = 4096;
    r[i].buffer = bufs[i]->data();
    w[i].arm(r[i]);
    ASSERT_EQ((*sub)->add(r[i]), 0);
  }
  (*sub)->unplug();
  for (auto& x : w) x.wait();
  DriveStats s = wait_stats(0, [](const DriveStats& s) { return s.ios == 3 && s.in_flight == 0; });
  EXPECT_EQ(s.merged, 0u);
  EXPECT_EQ(s.ios, 3u);
}

// A read through the member's page cache and a direct one go to the
// member on different descriptors: neighbours, they still make two IOs,
// while two neighbours of one kind make one; each returns its bytes, and
// only the former leave the member's pages cached.
TEST_F(EngineFixture, ReadsThroughThePageCacheMergeOnlyWithTheirOwnKind) {
  make_members(1, 1 << 20);
  if (members_[0].page_cache_fd() < 0) GTEST_SKIP() << "the member file is not on ext4 or XFS here";
  EngineConfig c;
  c.high_watermark = 64;
  c.inline_dispatch = false;
  std::vector<DriveSpec> drives = specs();
  drives[0].page_cache_fd = members_[0].page_cache_fd();
  start(c, 4096, std::move(drives));
  AlignedBuffer out(4 * 4096);
  fill(out, 7);
  ASSERT_EQ(io(IoOp::write, 0, out), 0);
  const DriveStats before = wait_stats(0, [](const DriveStats& s) { return s.ios == 1 && s.in_flight == 0; });
  // [0,4K) direct, [4K,8K) and [8K,12K) via the page cache, [12K,16K) direct.
  AlignedBuffer in[4] = {AlignedBuffer(4096), AlignedBuffer(4096), AlignedBuffer(4096), AlignedBuffer(4096)};
  Request r[4];
  Waiter w[4];
  auto sub = engine_->open_submitter();
  for (int i = 0; i < 4; ++i) {
    r[i].op = IoOp::read;
    r[i].offset = uint64_t(i) * 4096;
    r[i].length = 4096;
    r[i].buffer = in[i].data();
    r[i].via_page_cache = i == 1 || i == 2;
    w[i].arm(r[i]);
    ASSERT_EQ((*sub)->add(r[i]), 0);
  }
  (*sub)->unplug();
  for (auto& x : w) x.wait();
  DriveStats s = wait_stats(0, [&](const DriveStats& s) { return s.ios == before.ios + 3 && s.in_flight == 0; });
  EXPECT_EQ(s.ios - before.ios, 3u);
  EXPECT_EQ(s.merged - before.merged, 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(std::memcmp(in[i].data(), out.data() + i * 4096, 4096), 0) << i;
  const std::vector<bool> cached = test::cached_file_pages(members_[0].info().path);
  ASSERT_GE(cached.size(), 4u) << "cannot map the member to look";
  EXPECT_FALSE(cached[0]) << "a direct read left the member's page cached";
  EXPECT_TRUE(cached[1] && cached[2]) << "reads through the page cache left nothing there";
}

}  // namespace
}  // namespace peregrine::testing
