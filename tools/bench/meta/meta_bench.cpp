// meta_bench: metadata operations per second (create/stat/unlink in a loop,
// rewrites of written blocks as the write path does them, single thread and
// with fsync group commit over several threads) and mount
// (recovery) time for a volume with many files, on an in-memory volume.
//
//   meta_bench [--ops N] [--files N] [--threads N]
//
// The fsync loops also run on a volume whose flush sleeps 100 us (a device
// cache flush) to show group commit: ops per journal write > 1.
//
// Prints one line per measurement. Uses MemoryVolumeIo without durability
// tracking, so IO costs are memory copies: these numbers are the metadata
// layer's own CPU cost.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "peregrine/meta/memory_volume_io.h"
#include "peregrine/meta/metadata.h"

using namespace peregrine::meta;
using Clock = std::chrono::steady_clock;

namespace {

// "x" + std::to_string(i) trips a GCC 12 -Wrestrict false positive.
std::string name(const char* prefix, uint64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

Geometry bench_geometry() {
  Geometry g;
  g.meta_offset = 0;
  g.meta_size = uint64_t{2} << 30;  // 2 GiB: 512 MiB journal, 2 x 768 MiB slots
  g.data_offset = g.meta_size;
  g.data_size = uint64_t{1} << 40;
  g.stripe_unit = 128 * 1024;
  g.member_count = 4;
  return g;
}

std::unique_ptr<Metadata> mount_or_die(peregrine::VolumeIo& io, const Geometry& g, Options o = {}) {
  auto md = Metadata::mount(io, g, std::move(o));
  if (!md) {
    std::fprintf(stderr, "mount failed: %s\n", md.status().message().c_str());
    std::exit(1);
  }
  return std::move(*md);
}

void ops_loop(uint64_t n) {
  const Geometry g = bench_geometry();
  MemoryVolumeIo io(g.data_offset + g.data_size, false);
  auto md = mount_or_die(io, g);
  InodeAttr d;
  md->mkdir(kRootIno, "bench", 0755, Cred{}, &d);
  std::vector<std::string> names(n);
  for (uint64_t i = 0; i < n; ++i) names[i] = name("file-", i);
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    InodeAttr a;
    if (md->mknod(d.ino, names[i], S_IFREG | 0644, 0, Cred{}, &a) != 0) std::abort();
  }
  auto t1 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    InodeAttr a;
    if (md->lookup(d.ino, names[i], &a) != 0) std::abort();
  }
  auto t2 = Clock::now();
  uint64_t listed = 0, cookie = 0;
  for (;;) {
    std::vector<DirEntry> page;
    if (md->readdir(d.ino, cookie, 256, &page) != 0) std::abort();
    if (page.empty()) break;
    listed += page.size();
    cookie = page.back().cookie;
  }
  auto t2b = Clock::now();
  if (listed != n) std::abort();
  for (uint64_t i = 0; i < n; ++i) {
    if (md->unlink(d.ino, names[i]) != 0) std::abort();
  }
  auto t3 = Clock::now();
  md->sync();
  std::printf("create  %9.0f ops/s  (%lu in one directory, 1 thread)\n", n / secs(t0, t1), (unsigned long)n);
  std::printf("stat    %9.0f ops/s  (lookup + getattr)\n", n / secs(t1, t2));
  std::printf("readdir %9.0f entries/s  (pages of 256 from a cookie)\n", n / secs(t2, t2b));
  std::printf("unlink  %9.0f ops/s\n", n / secs(t2b, t3));
  std::printf("journal %lu batches written by the background committer\n", (unsigned long)md->journal_batches());
  (void)md->unmount();
}

// A volume whose flush takes `flush_us` microseconds, like a device cache
// flush, so that group commit has something to amortise.
class SlowFlushIo : public peregrine::VolumeIo {
 public:
  SlowFlushIo(uint64_t size, uint32_t flush_us) : mem_(size, false), flush_us_(flush_us) {}
  uint64_t size() const override { return mem_.size(); }
  int read(uint64_t off, std::span<std::byte> out) override { return mem_.read(off, out); }
  int write(uint64_t off, std::span<const std::byte> d) override { return mem_.write(off, d); }
  int flush() override {
    std::this_thread::sleep_for(std::chrono::microseconds(flush_us_));
    return mem_.flush();
  }

 private:
  MemoryVolumeIo mem_;
  uint32_t flush_us_;
};

void fsync_loop(uint64_t n, int threads, uint32_t flush_us) {
  const Geometry g = bench_geometry();
  SlowFlushIo io(g.data_offset + g.data_size, flush_us);
  auto md = mount_or_die(io, g);
  const uint64_t before = md->journal_batches();
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      InodeAttr d;
      md->mkdir(kRootIno, name("t", t), 0755, Cred{}, &d);
      for (uint64_t i = 0; i < n / threads; ++i) {
        InodeAttr a;
        if (md->mknod(d.ino, name("f", i), S_IFREG | 0644, 0, Cred{}, &a) != 0) std::abort();
        if (md->fsync(a.ino) != 0) std::abort();
      }
    });
  }
  for (auto& t : ts) t.join();
  auto t1 = Clock::now();
  const uint64_t batches = md->journal_batches() - before;
  std::printf("create+fsync %9.0f ops/s  (%d threads, flush %u us, %.2f ops per journal write)\n", n / secs(t0, t1),
              threads, flush_us, batches ? double(n) / batches : 0.0);
  (void)md->unmount();
}

void mount_time(uint64_t files) {
  const Geometry g = bench_geometry();
  MemoryVolumeIo io(g.data_offset + g.data_size, false);
  {
    auto md = mount_or_die(io, g);
    const uint64_t per_dir = 1000;
    auto t0 = Clock::now();
    for (uint64_t dnum = 0; dnum * per_dir < files; ++dnum) {
      InodeAttr d;
      md->mkdir(kRootIno, name("d", dnum), 0755, Cred{}, &d);
      for (uint64_t i = 0; i < per_dir && dnum * per_dir + i < files; ++i) {
        InodeAttr a;
        if (md->mknod(d.ino, name("file-", i), S_IFREG | 0644, 0, Cred{}, &a) != 0) std::abort();
      }
    }
    auto t1 = Clock::now();
    std::printf("populate %lu files: %.2f s (%.0f creates/s)\n", (unsigned long)files, secs(t0, t1),
                files / secs(t0, t1));
    // Crash: everything committed but no checkpoint since mount.
    md->sync();
  }
  auto t2 = Clock::now();
  {
    auto md = mount_or_die(io, g);
    auto t3 = Clock::now();
    const MountReport& r = md->mount_report();
    std::printf(
        "mount after crash (replay %lu records): %.2f s  [read %.0f ms, decode %.0f, replay %.0f, "
        "rebuild %.0f, checkpoint %.0f]\n",
        (unsigned long)r.replayed_records, secs(t2, t3), r.read_ms, r.decode_ms, r.replay_ms, r.rebuild_ms,
        r.checkpoint_ms);
    auto t4 = Clock::now();
    if (!md->unmount()) std::abort();
    auto t5 = Clock::now();
    std::printf("unmount (checkpoint of %lu files): %.2f s\n", (unsigned long)files, secs(t4, t5));
  }
  auto t6 = Clock::now();
  auto md = mount_or_die(io, g);
  auto t7 = Clock::now();
  const MountReport& r = md->mount_report();
  std::printf(
      "mount from checkpoint, %lu files: %.2f s  [read %.0f ms, decode %.0f, rebuild %.0f]  "
      "(metadata memory image %.0f MiB)\n",
      (unsigned long)files, secs(t6, t7), r.read_ms, r.decode_ms, r.rebuild_ms, io.memory_bytes() / 1048576.0);
}

// The IO path's metadata cost for rewrites (the 4 KiB random-write
// benchmark's case): prepare_write + complete_write of one already written
// block of one file, from `threads` threads at once.
void rewrite_loop(uint64_t n, int threads) {
  const Geometry g = bench_geometry();
  MemoryVolumeIo io(g.data_offset + g.data_size, false);
  auto md = mount_or_die(io, g);
  InodeAttr f;
  if (md->mknod(kRootIno, "f", S_IFREG | 0644, 0, Cred{}, &f) != 0) std::abort();
  const uint64_t size = uint64_t{256} << 20;
  std::vector<WriteRange> all;
  if (md->prepare_write(f.ino, 0, size, &all) != 0 || md->complete_write(f.ino, all, size) != 0) std::abort();
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      while (!go.load()) {
      }
      uint64_t x = 88172645463325252ull + static_cast<uint64_t>(t);
      std::vector<WriteRange> ranges;
      for (uint64_t i = 0; i < n / static_cast<uint64_t>(threads); ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t off = x % (size / 4096) * 4096;
        ranges.clear();
        if (md->prepare_write(f.ino, off, 4096, &ranges) != 0) std::abort();
        if (md->complete_write(f.ino, ranges, off + 4096) != 0) std::abort();
      }
    });
  }
  auto t0 = Clock::now();
  go.store(true);
  for (auto& t : ts) t.join();
  auto t1 = Clock::now();
  std::printf("rewrite %9.0f ops/s  (prepare_write + complete_write of a written 4 KiB block, %d threads)\n",
              n / secs(t0, t1), threads);
  (void)md->unmount();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t ops = 200000, files = 1000000;
  int threads = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ops"))
      ops = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--files"))
      files = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
  }
  ops_loop(ops);
  rewrite_loop(ops * 5, 1);
  rewrite_loop(ops * 5, 2);
  for (uint32_t flush_us : {0u, 100u}) {
    fsync_loop(ops / 20, 1, flush_us);
    fsync_loop(ops / 20, threads, flush_us);
    fsync_loop(ops / 20, threads * 4, flush_us);
  }
  mount_time(files);
  return 0;
}
