// Data integrity under concurrency: several threads write and read random
// ranges of several files against an in-memory model, byte for byte.
// Files are buffered (unaligned ranges), O_DIRECT aligned, and O_DIRECT
// unaligned (FUSE passes those to the daemon as is: its read-modify-write
// path). Threads own interleaved regions whose edges share blocks and
// stripe units, so neighbouring writes race on the same block but never on
// the same byte; every read is checked at once, every file again after the
// run and after a remount. Runs per page-cache mode, and with IO batched
// across requests on every request (the low watermark at 0 keeps each
// read's and write's IO staged until the worker has no request waiting or
// must wait) and on none.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <thread>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

struct Mode {
  const char* name;
  const char* options;  // for -o
};
constexpr Mode kModes[] = {
    {"direct", "fuse.cache=direct"},
    {"writeback", "fuse.cache=writeback"},
    {"direct_always_staged", "fuse.cache=direct,engine.low_watermark_per_drive=0"},
    {"direct_unbatched", "fuse.cache=direct,fuse.batch_requests=false"},
    // Helpers called to the read turn, and every worker in read() (classic).
    {"direct_four_workers", "fuse.cache=direct,fuse.workers=4"},
    {"direct_every_worker_reads", "fuse.cache=direct,fuse.workers=4,fuse.one_reader=false"},
};

void PrintTo(const Mode& m, std::ostream* os) { *os << m.options; }

class IntegrityTest : public MountedTest, public ::testing::WithParamInterface<Mode> {
 protected:
  std::vector<std::string> mount_options() override { return {"-o", GetParam().options}; }
};

struct FileKind {
  const char* name;
  int flags;      // extra open flags
  size_t region;  // bytes per ownership region
  size_t align;   // offset and length alignment (1 = none)
};

constexpr FileKind kFiles[] = {
    {"buffered", 0, 200003, 1},
    {"direct", O_DIRECT, 393216, 4096},
    {"direct-unaligned", O_DIRECT, 200003, 1},
};
constexpr size_t kFileSize = 8 << 20;
constexpr int kThreads = 4;
constexpr int kOpsPerThread = 1000;

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, AlignedFree>;
Buffer aligned(size_t size) {
  return Buffer(static_cast<char*>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096)));
}

std::string first_difference(const std::string& got, const std::string& want, size_t base) {
  if (got.size() != want.size())
    return "length " + std::to_string(got.size()) + " instead of " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "first differing byte at file offset " + std::to_string(base + i) + ": got " +
             std::to_string(static_cast<unsigned char>(got[i])) + ", want " +
             std::to_string(static_cast<unsigned char>(want[i]));
  return "";
}

// Reads `size` bytes at `off` through `fd` (aligned buffer for O_DIRECT).
std::string pread_all(int fd, size_t size, off_t off) {
  Buffer buf = aligned(size);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, buf.get() + got, size - got, off + static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return std::string(buf.get(), got);
}

bool pwrite_all(int fd, const std::string& data, off_t off) {
  Buffer buf = aligned(data.size());
  std::copy(data.begin(), data.end(), buf.get());
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd, buf.get() + done, data.size() - done, off + static_cast<off_t>(done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

class Worker {
 public:
  Worker(int id, const std::string& mnt, std::vector<std::string>* models) : id_(id), rng_(1234 + id), models_(models) {
    for (const FileKind& k : kFiles) fds_.emplace_back(::open((mnt + "/" + k.name).c_str(), O_RDWR | k.flags));
  }

  void run() {
    for (int op = 0; op < kOpsPerThread && failures_.empty(); ++op) {
      size_t f = rng_() % std::size(kFiles);
      const FileKind& k = kFiles[f];
      size_t regions = kFileSize / k.region;
      size_t mine = (regions - id_ + kThreads - 1) / kThreads;  // regions id, id+T, ... below `regions`
      size_t region = id_ + kThreads * (rng_() % mine);
      size_t start = region * k.region, end = start + k.region;
      size_t off = start + rng_() % (k.region - 1);
      size_t len = 1 + rng_() % (end - off);
      if (k.align > 1) {
        off = (off + k.align - 1) / k.align * k.align;
        if (off >= end) continue;
        len = std::max<size_t>(k.align, (std::min(len, end - off)) / k.align * k.align);
        if (off + len > end) continue;
      }
      std::string& model = (*models_)[f];
      if (rng_() % 10 < 6) {
        std::string data = pattern(len, rng_());
        if (!pwrite_all(fds_[f].get(), data, static_cast<off_t>(off))) {
          failures_ = std::string(k.name) + ": pwrite(" + std::to_string(off) + ", " + std::to_string(len) +
                      "): " + std::strerror(errno);
          break;
        }
        std::copy(data.begin(), data.end(), model.begin() + static_cast<std::ptrdiff_t>(off));  // own bytes only
      } else {
        std::string got = pread_all(fds_[f].get(), len, static_cast<off_t>(off));
        std::string diff = first_difference(got, model.substr(off, len), off);
        if (!diff.empty())
          failures_ = std::string(k.name) + ": thread " + std::to_string(id_) + " read " + std::to_string(len) +
                      " bytes at " + std::to_string(off) + ": " + diff;
      }
    }
  }
  const std::string& failures() const { return failures_; }

 private:
  size_t id_;
  std::mt19937_64 rng_;
  std::vector<std::string>* models_;
  std::vector<Fd> fds_;
  std::string failures_;
};

void check_files(const std::string& mnt, const std::vector<std::string>& models, const char* when) {
  for (size_t f = 0; f < std::size(kFiles); ++f) {
    for (int flags : {0, O_DIRECT}) {
      Fd fd(::open((mnt + "/" + kFiles[f].name).c_str(), O_RDONLY | flags));
      ASSERT_TRUE(fd.ok());
      std::string got = pread_all(fd.get(), kFileSize, 0);
      EXPECT_EQ(first_difference(got, models[f], 0), "")
          << kFiles[f].name << " " << when << (flags ? " (O_DIRECT read)" : " (buffered read)");
    }
  }
}

TEST_P(IntegrityTest, ConcurrentRandomRangesMatchTheModel) {
  std::vector<std::string> models;
  for (const FileKind& k : kFiles) {
    std::string initial = pattern(kFileSize, k.region);  // no zeros: a lost or misplaced write shows
    ASSERT_TRUE(write_file(at(k.name), initial));
    models.push_back(initial);
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < kThreads; ++t) workers.push_back(std::make_unique<Worker>(t, volume_->mountpoint(), &models));
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
  for (auto& t : threads) t.join();
  for (auto& w : workers) EXPECT_EQ(w->failures(), "");
  workers.clear();  // closes every descriptor before the whole-file checks

  check_files(volume_->mountpoint(), models, "after the run");
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  check_files(volume_->mountpoint(), models, "after a remount");
}

INSTANTIATE_TEST_SUITE_P(Mode, IntegrityTest, ::testing::ValuesIn(kModes),
                         [](const ::testing::TestParamInfo<Mode>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace peregrine::fstest
