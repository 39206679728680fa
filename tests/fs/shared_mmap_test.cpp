// Shared writable mmap under fuse.cache = direct (files opened
// FOPEN_DIRECT_IO): the kernel allows it only when the daemon negotiates
// FUSE_DIRECT_IO_ALLOW_MMAP, which libfuse 3.14 cannot ask for; the
// transport adds it to INIT's reply. Before that, mmap failed with ENODEV
// (SQLite in WAL mode: "disk I/O error"). Bytes written through the map,
// msync'd, must read back through read(), and again after a remount.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using SharedMmapTest = DirectMountedTest;

TEST_F(SharedMmapTest, WritesThroughTheMapReadBackAndSurviveRemount) {
  // Three whole blocks and a partial one: the last page is written back
  // only up to the end of the file.
  const size_t size = 3 * 4096 + 100;
  const std::string data = pattern(size, 41);
  {
    Fd fd(::open(at("mapped").c_str(), O_RDWR | O_CREAT, 0644));
    ASSERT_TRUE(fd.ok()) << std::strerror(errno);
    ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0) << std::strerror(errno);
    void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    ASSERT_NE(map, MAP_FAILED) << "shared writable mmap: " << std::strerror(errno);
    std::memcpy(map, data.data(), size);
    EXPECT_EQ(::msync(map, size, MS_SYNC), 0) << std::strerror(errno);
    ASSERT_EQ(::munmap(map, size), 0);
  }
  EXPECT_TRUE(read_file(at("mapped")) == data) << "read() after msync differs from what the map wrote";
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(read_file(at("mapped")) == data) << "mapped writes lost across a remount";
}

TEST_F(SharedMmapTest, ReadThroughTheMapSeesWhatWriteWrote) {
  const std::string data = pattern(2 * 4096, 42);
  ASSERT_TRUE(write_file(at("written"), data));
  Fd fd(::open(at("written").c_str(), O_RDONLY));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  void* map = ::mmap(nullptr, data.size(), PROT_READ, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED) << std::strerror(errno);
  EXPECT_EQ(std::memcmp(map, data.data(), data.size()), 0);
  ::munmap(map, data.size());
}

}  // namespace
}  // namespace peregrine::fstest
