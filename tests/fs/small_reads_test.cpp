// Reads of less than a block (fs_read.cpp, read_blocks.h): the block a
// small read came from is kept, and the next small reads of it are
// answered from memory with the file's bytes; every change of the file
// between two such reads (writes aligned and not, appends into the tail
// block, truncate, fallocate, O_TRUNC, a shared mapping, another
// descriptor) is seen as ext4 shows it; and small reads racing a writer of
// the same blocks see every write that returned before they began.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using json = nlohmann::json;
constexpr size_t kBlock = 4096;

uint64_t read_block_hits(const std::string& mountpoint) {
  std::string buf(1 << 20, '\0');
  ssize_t n = ::getxattr(mountpoint.c_str(), "user.peregrine.stats", buf.data(), buf.size());
  if (n <= 0) return 0;
  json doc = json::parse(buf.substr(0, static_cast<size_t>(n)));
  return doc.contains("read_blocks") ? doc["read_blocks"].at("hits").get<uint64_t>() : 0;
}

// The whole file through pread(2) calls of `chunk` bytes.
std::string read_in_chunks(const std::string& path, size_t chunk) {
  Fd fd(::open(path.c_str(), O_RDONLY));
  if (!fd.ok()) return "open failed: " + std::string(std::strerror(errno));
  std::string out, buf(chunk, '\0');
  for (off_t off = 0;; off += static_cast<off_t>(chunk)) {
    ssize_t n = ::pread(fd.get(), buf.data(), chunk, off);
    if (n < 0) return "pread failed: " + std::string(std::strerror(errno));
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  return out;
}

using SmallReadsTest = DirectMountedTest;  // read blocks: a direct-mode feature

TEST_F(SmallReadsTest, SmallReadsOfABlockComeFromMemoryWithTheFilesBytes) {
  const std::string data = pattern(16 * kBlock + 123, 3);
  ASSERT_TRUE(write_file(at("f"), data));
  const uint64_t before = read_block_hits(volume_->mountpoint());
  // 100-byte reads: 41 per block, the first of each reads the members.
  EXPECT_TRUE(read_in_chunks(at("f"), 100) == data);
  EXPECT_TRUE(read_in_chunks(at("f"), 7) == data);
  EXPECT_GE(read_block_hits(volume_->mountpoint()) - before, data.size() / 100);
}

// Each step changes the file; before it, small reads have kept its blocks;
// after it, small reads give what ext4 gives for the same calls.
TEST_F(SmallReadsTest, EveryChangeBetweenSmallReadsIsSeenAsOnExt4) {
  TempDir ext4("peregrine-small-reads-ref");
  const std::string block = pattern(kBlock, 9);
  const std::vector<FileStep> steps = {
      {"write 5 blocks and a bit",
       [](int fd, const std::string&) { return write_at(fd, pattern(5 * kBlock + 300, 1), 0); }},
      {"aligned overwrite of block 1", [&](int fd, const std::string&) { return write_at(fd, block, kBlock); }},
      {"unaligned overwrite inside block 2",
       [](int fd, const std::string&) { return write_at(fd, "abcdefg", 2 * kBlock + 10); }},
      {"unaligned write across blocks 2 and 3",
       [](int fd, const std::string&) { return write_at(fd, pattern(200, 4), 3 * kBlock - 100); }},
      {"appends into the last block",
       [](int fd, const std::string&) {
         if (::lseek(fd, 0, SEEK_END) < 0) return false;
         for (int i = 0; i < 50; ++i) {
           if (::write(fd, "z", 1) != 1) return false;
         }
         return true;
       }},
      {"truncate into block 4", [](int fd, const std::string&) { return ::ftruncate(fd, 4 * kBlock + 17) == 0; }},
      {"truncate up", [](int fd, const std::string&) { return ::ftruncate(fd, 7 * kBlock) == 0; }},
      {"write into the grown part", [](int fd, const std::string&) { return write_at(fd, "grown", 6 * kBlock + 5); }},
      {"punch block 1",
       [](int fd, const std::string&) {
         return ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kBlock, kBlock) == 0;
       }},
      {"zero a range inside block 2",
       [](int fd, const std::string&) {
         return ::fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 2 * kBlock + 5, 20) == 0;
       }},
      {"write through another descriptor",
       [](int, const std::string& path) {
         Fd other(::open(path.c_str(), O_WRONLY));
         return other.ok() && write_at(other.get(), "other", 3 * kBlock + 1);
       }},
      {"store through a shared mapping",
       [](int fd, const std::string&) {
         void* m = ::mmap(nullptr, 2 * kBlock, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
         if (m == MAP_FAILED) return false;
         std::memcpy(static_cast<char*>(m) + kBlock + 7, "mapped", 6);
         bool ok = ::msync(m, 2 * kBlock, MS_SYNC) == 0;
         return ::munmap(m, 2 * kBlock) == 0 && ok;
       }},
      {"open with O_TRUNC and write again",
       [](int, const std::string& path) {
         Fd t(::open(path.c_str(), O_WRONLY | O_TRUNC));
         return t.ok() && write_at(t.get(), pattern(kBlock + 10, 6), 0);
       }},
  };
  const uint64_t before = read_block_hits(volume_->mountpoint());
  const std::string skip = run_beside_reference(steps, at("f"), ext4.path() + "/f", [&](const FileStep& step) {
    const std::string want = read_file(ext4.path() + "/f");
    // Twice: the first pass may keep blocks, the second reads them.
    for (int pass = 0; pass < 2; ++pass) {
      const std::string got = read_in_chunks(at("f"), 100);
      ASSERT_EQ(got.size(), want.size()) << "after " << step.what << ", pass " << pass;
      ASSERT_TRUE(got == want) << "after " << step.what << ", pass " << pass;
    }
  });
  if (!skip.empty()) GTEST_SKIP() << skip;
  if (HasFailure()) return;
  EXPECT_GT(read_block_hits(volume_->mountpoint()), before) << "no read was answered from memory";
}

// A writer rewrites two blocks with ever higher versions (every 8 bytes
// of a version hold its number), with aligned 4 KiB writes or with 8-byte
// writes, and publishes each word's version once its write has returned;
// a reader reads 8 bytes at a time, eight words of a block in a row (so
// that some come from a kept block). Each read gives a version that was
// written, and at least the one published there before the read began.
std::string race_small_reads_with_a_writer(const std::string& path, bool aligned) {
  constexpr int kBlocks = 2;
  constexpr size_t kWords = kBlocks * kBlock / 8;
  if (!write_file(path, std::string(kBlocks * kBlock, '\0'))) return "cannot write " + path;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> version{0};  // the newest version written
  std::vector<std::atomic<uint64_t>> published(kWords);
  std::string writer_failure;
  std::thread writer([&] {
    Fd fd(::open(path.c_str(), O_WRONLY));
    std::vector<uint64_t> words(kBlock / 8);
    for (int i = 0; fd.ok() && !stop.load(); ++i) {
      const uint64_t v = version.load() + 1;
      const size_t first = static_cast<size_t>(i % kBlocks) * (kBlock / 8);
      const size_t count = aligned ? kBlock / 8 : 1;
      const size_t at_word = aligned ? first : first + static_cast<size_t>(i / kBlocks) % (kBlock / 8);
      std::fill(words.begin(), words.end(), v);
      version.store(v);  // before the write: a read may see it at once
      if (::pwrite(fd.get(), words.data(), count * 8, static_cast<off_t>(at_word * 8)) !=
          static_cast<ssize_t>(count * 8)) {
        writer_failure = std::string("pwrite failed: ") + std::strerror(errno);
        return;
      }
      for (size_t w = at_word; w < at_word + count; ++w) published[w].store(v);
    }
    if (!fd.ok()) writer_failure = std::string("open failed: ") + std::strerror(errno);
  });
  Fd fd(::open(path.c_str(), O_RDONLY));
  std::string failure = fd.ok() ? "" : "open failed";
  for (int i = 0; i < 8000 && failure.empty(); ++i) {
    const size_t word = ((static_cast<size_t>(i / 8) * 2654435761u) % kWords) / 8 * 8 + i % 8;
    const uint64_t at_least = published[word].load();
    uint64_t got = 0;
    if (::pread(fd.get(), &got, 8, static_cast<off_t>(word * 8)) != 8) {
      failure = "pread failed: " + std::string(std::strerror(errno));
    } else if (got > version.load()) {
      failure = "word " + std::to_string(word) + " holds " + std::to_string(got) + ", never written";
    } else if (got < at_least) {
      failure = "word " + std::to_string(word) + " reads version " + std::to_string(got) + " after version " +
                std::to_string(at_least) + " was written there";
    }
  }
  stop = true;
  writer.join();
  return failure.empty() ? writer_failure : failure;
}

TEST_F(SmallReadsTest, SmallReadsRacingAlignedWritesSeeEveryWriteThatReturned) {
  EXPECT_EQ(race_small_reads_with_a_writer(at("f"), true), "");
}

TEST_F(SmallReadsTest, SmallReadsRacingSmallWritesSeeEveryWriteThatReturned) {
  EXPECT_EQ(race_small_reads_with_a_writer(at("f"), false), "");
}

}  // namespace
}  // namespace peregrine::fstest
