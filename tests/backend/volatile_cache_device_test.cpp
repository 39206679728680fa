// The power-cut layer (volatile_cache_device.h): a flush makes durable
// exactly the writes that completed before it; at the cut every other
// write is kept, lost or torn, a newer write that was kept is never undone
// by an older one's old bytes, and the seeds explore all three fates.
#include "peregrine/backend/volatile_cache_device.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <set>
#include <string>
#include <vector>

namespace peregrine {
namespace {

// A member that does each IO at once with pwrite, and reports it at the
// next reap; it flushes on the caller's thread too, as a real member does.
class InstantDevice final : public DeviceQueue {
 public:
  explicit InstantDevice(int fd) : fd_(fd) {}
  void start(const DeviceIo& io) override {
    int32_t result = 0;
    if (io.op == IoOp::write) {
      ssize_t n = ::pwritev(fd_, io.iov, static_cast<int>(io.iovcnt), static_cast<off_t>(io.offset));
      result = n < 0 ? -errno : static_cast<int32_t>(n);
    }
    done_.push_back({io.tag, result});
  }
  void submit() override {}
  size_t reap(std::span<DeviceCompletion> out) override {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      out[n++] = done_.front();
      done_.pop_front();
    }
    return n;
  }
  Status attach_waker(CompletionWaker&) override { return Status::ok(); }
  bool prepare_sleep(uint64_t&) override { return done_.empty(); }
  bool has_ready() const override { return !done_.empty(); }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override { return reap(out); }
  bool flushes_blocking() const override { return true; }
  int flush_blocking() override { return 0; }
  bool transfers_blocking() const override { return true; }
  int64_t transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) override {
    const off_t at = static_cast<off_t>(offset);
    ssize_t n = op == IoOp::write ? ::pwrite(fd_, buf, len, at) : ::pread(fd_, buf, len, at);
    return n < 0 ? -errno : n;
  }

 private:
  int fd_;
  std::deque<DeviceCompletion> done_;
};

class VolatileCacheDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pcut-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    member_ = dir_ + "/member";
    log_ = dir_ + "/member.undo";
    fd_ = ::open(member_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, kSize), 0);
    put(0, kSize, 'o');  // the old bytes
    auto dev = VolatileCacheDevice::create(std::make_unique<InstantDevice>(fd_), fd_, PowerCutPlan{log_, 0, {}});
    ASSERT_TRUE(static_cast<bool>(dev)) << dev.status().message();
    dev_ = std::move(*dev);
  }
  void TearDown() override {
    dev_.reset();
    ::close(fd_);
    std::system(("rm -rf " + dir_).c_str());
  }
  void put(uint64_t off, uint64_t len, char c) {
    std::string b(len, c);
    ASSERT_EQ(::pwrite(fd_, b.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
  }
  // One IO through the layer, reaped at once.
  void io(IoOp op, uint64_t off = 0, uint64_t len = 0, char c = 0) {
    std::string data(len, c);
    iovec v{data.data(), data.size()};
    dev_->start(DeviceIo{next_tag_++, op, off, &v, op == IoOp::write ? 1u : 0u});
    DeviceCompletion out[4];
    ASSERT_EQ(dev_->reap(out), 1u);
    ASSERT_GE(out[0].result, 0);
  }
  std::string member() const {
    std::string b(kSize, '\0');
    EXPECT_EQ(::pread(fd_, b.data(), kSize, 0), static_cast<ssize_t>(kSize));
    return b;
  }
  // Cuts power on a copy of the member (the log stays for the next seed).
  std::string cut(uint64_t seed, PowerCutOutcome* outcome = nullptr) {
    const std::string copy = dir_ + "/copy";
    EXPECT_EQ(std::system(("cp " + member_ + " " + copy).c_str()), 0);
    auto out = apply_power_cut(copy, log_, seed);
    EXPECT_TRUE(static_cast<bool>(out)) << out.status().message();
    if (out && outcome) *outcome = *out;
    int fd = ::open(copy.c_str(), O_RDONLY);
    std::string b(kSize, '\0');
    EXPECT_EQ(::pread(fd, b.data(), kSize, 0), static_cast<ssize_t>(kSize));
    ::close(fd);
    return b;
  }

  static constexpr uint64_t kSize = 64 << 10;
  std::string dir_, member_, log_;
  int fd_ = -1;
  std::unique_ptr<DeviceQueue> dev_;
  uint32_t next_tag_ = 1;
};

TEST_F(VolatileCacheDeviceTest, AFlushMakesDurableWhatCompletedBeforeItAndNothingLater) {
  io(IoOp::write, 0, 8192, 'a');
  io(IoOp::flush);
  io(IoOp::write, 16384, 8192, 'b');
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    PowerCutOutcome o;
    std::string after = cut(seed, &o);
    EXPECT_EQ(o.pending, 1u);
    EXPECT_EQ(after.substr(0, 8192), std::string(8192, 'a')) << "seed " << seed << ": a flushed write was undone";
    std::string b = after.substr(16384, 8192);
    // Kept, lost, or torn at a 512-byte boundary: new bytes, then old.
    size_t n = b.find_first_not_of('b');
    if (n == std::string::npos) n = b.size();
    EXPECT_EQ(n % 512, 0u) << "seed " << seed;
    EXPECT_EQ(b.find_first_not_of('o', n), std::string::npos) << "seed " << seed;
    seen.insert(n == 8192 ? "kept" : n == 0 ? "lost" : "torn");
  }
  EXPECT_EQ(seen, (std::set<std::string>{"kept", "lost", "torn"}));
  EXPECT_EQ(member().substr(16384, 8192), std::string(8192, 'b'));  // the member itself is untouched
}

// The flush the engine makes on a waiting thread (Drive::flush_blocking)
// counts as one: what completed before it survives every cut.
TEST_F(VolatileCacheDeviceTest, ABlockingFlushMakesDurableWhatCompletedBeforeItAndNothingLater) {
  ASSERT_TRUE(dev_->flushes_blocking());
  io(IoOp::write, 0, 8192, 'a');
  ASSERT_EQ(dev_->flush_blocking(), 0);
  io(IoOp::write, 16384, 8192, 'b');
  bool b_lost_once = false;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    PowerCutOutcome o;
    std::string after = cut(seed, &o);
    EXPECT_EQ(o.pending, 1u) << "seed " << seed;
    EXPECT_EQ(after.substr(0, 8192), std::string(8192, 'a')) << "seed " << seed << ": a flushed write was undone";
    b_lost_once = b_lost_once || after.substr(16384, 8192) != std::string(8192, 'b');
  }
  EXPECT_TRUE(b_lost_once) << "the write after the flush was never lost";
}

// A write the engine makes on a waiting thread (Drive::transfer_blocking,
// the journal's commit) is as volatile as one through start() until a
// flush covers it, and as durable after.
TEST_F(VolatileCacheDeviceTest, ABlockingWriteIsLostOrKeptAtACutUntilAFlushCoversIt) {
  ASSERT_TRUE(dev_->transfers_blocking());
  std::string a(8192, 'a'), b(8192, 'b');
  ASSERT_EQ(dev_->transfer_blocking(IoOp::write, 0, reinterpret_cast<std::byte*>(a.data()), a.size()), 8192);
  ASSERT_EQ(member().substr(0, 8192), a);
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    PowerCutOutcome o;
    std::string after = cut(seed, &o);
    EXPECT_EQ(o.pending, 1u) << "seed " << seed;
    std::string got = after.substr(0, 8192);
    seen.insert(got == a ? "kept" : got == std::string(8192, 'o') ? "lost" : "torn");
  }
  EXPECT_TRUE(seen.count("lost")) << "the unflushed write was never lost";
  ASSERT_EQ(dev_->flush_blocking(), 0);
  ASSERT_EQ(dev_->transfer_blocking(IoOp::write, 16384, reinterpret_cast<std::byte*>(b.data()), b.size()), 8192);
  bool b_lost_once = false;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    std::string after = cut(seed);
    EXPECT_EQ(after.substr(0, 8192), a) << "seed " << seed << ": a flushed write was undone";
    b_lost_once = b_lost_once || after.substr(16384, 8192) != b;
  }
  EXPECT_TRUE(b_lost_once) << "the write after the flush was never lost";
}

TEST_F(VolatileCacheDeviceTest, AKeptNewerWriteIsNeverUndoneByAnOlderOne) {
  io(IoOp::write, 4096, 4096, 'a');
  io(IoOp::write, 4096, 4096, 'b');
  std::set<char> seen;
  int one_kept_one_lost = 0;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    PowerCutOutcome o;
    std::string block = cut(seed, &o).substr(4096, 4096);
    // Unit by unit: b where the newer write was kept, else a or the old
    // bytes, never a over a kept b.
    for (size_t u = 0; u < 4096; u += 512) {
      char c = block[u];
      EXPECT_EQ(block.substr(u, 512), std::string(512, c)) << "seed " << seed;
      seen.insert(c);
    }
    // One write kept whole and the other lost: the kept one's bytes, all
    // of them (the newer kept: b, the older's old bytes never over it; the
    // older kept: a), never the old bytes.
    if (o.kept == 1 && o.lost == 1) {
      ++one_kept_one_lost;
      EXPECT_TRUE(block == std::string(4096, 'a') || block == std::string(4096, 'b')) << "seed " << seed;
    }
  }
  EXPECT_EQ(seen, (std::set<char>{'o', 'a', 'b'}));
  EXPECT_GT(one_kept_one_lost, 0);
}

TEST_F(VolatileCacheDeviceTest, AFlushStartedBeforeAWriteCompletedDoesNotCoverIt) {
  // The write is started, then a flush, and only then is the write reaped:
  // as a drive, the flush covers only what had completed when it began.
  std::string data(4096, 'w');
  iovec v{data.data(), data.size()};
  dev_->start(DeviceIo{100, IoOp::write, 0, &v, 1});
  dev_->start(DeviceIo{101, IoOp::flush, 0, nullptr, 0});
  DeviceCompletion out[4];
  ASSERT_EQ(dev_->reap(out), 2u);
  bool lost_once = false;
  for (uint64_t seed = 0; seed < 32; ++seed) lost_once = lost_once || cut(seed).substr(0, 4096) != data;
  EXPECT_TRUE(lost_once);
}

}  // namespace
}  // namespace peregrine
