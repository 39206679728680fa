// fallocate(2) marks the file modified (mtime and ctime), as ext4, xfs and
// tmpfs do (file_modified() in their fallocate paths), side by side.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using FallocateTimesTest = SideBySideTest;

TEST_F(FallocateTimesTest, FallocateUpdatesMtimeAndCtime) {
  for (int mode : {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE}) {
    Outcome o = same("fallocate changes mtime and ctime", [&](const std::string& r) {
      const timespec old[2] = {{1000, 0}, {1000, 0}};
      std::string f = r + "/f";
      if (!write_file(f, pattern(1 << 20, 1)) || ::utimensat(AT_FDCWD, f.c_str(), old, 0) != 0) return outcome(-1);
      struct stat a, b;
      ::stat(f.c_str(), &a);
      timespec now;  // wait for the coarse clock to pass the ctime utimensat set
      do ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
      while (now.tv_sec < a.st_ctim.tv_sec || (now.tv_sec == a.st_ctim.tv_sec && now.tv_nsec <= a.st_ctim.tv_nsec));
      Fd fd(::open(f.c_str(), O_RDWR));
      if (::fallocate(fd.get(), mode, 4096, 1 << 20) != 0) return outcome(-1);
      ::fstat(fd.get(), &b);
      return outcome((b.st_mtim.tv_sec != a.st_mtim.tv_sec) * 1 +
                     (b.st_ctim.tv_nsec != a.st_ctim.tv_nsec || b.st_ctim.tv_sec != a.st_ctim.tv_sec) * 2);
    });
    EXPECT_EQ(o.ret, 3) << "mode " << mode;
  }
}

}  // namespace
}  // namespace peregrine::fstest
