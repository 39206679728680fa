// Running out of metadata space: creating files in a volume whose metadata
// area is full fails cleanly with ENOSPC, statfs's inode counts stay
// consistent, and the daemon can still checkpoint at unmount (exit 0) and
// the next mount sees every file that was created.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using MetadataFullTest = MountedTest;  // default 16 MiB metadata area

TEST_F(MetadataFullTest, CreatingTooManyFilesGivesEnospcAndUnmountsCleanly) {
  ASSERT_EQ(::mkdir(at("many").c_str(), 0755), 0);
  struct statvfs s;
  ASSERT_EQ(::statvfs(volume_->mountpoint().c_str(), &s), 0);
  EXPECT_LE(s.f_ffree, s.f_files) << "statfs: more free inodes than inodes";
  int created = 0;
  int err = 0;
  for (int i = 0; i < 1000000; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/many/entry-%07d-with-a-longer-name", i);
    if (::mknod(at(name).c_str(), S_IFREG | 0644, 0) != 0) {
      err = errno;
      break;
    }
    ++created;
  }
  EXPECT_EQ(err, ENOSPC) << "after " << created << " files: " << std::strerror(err);
  ASSERT_EQ(::statvfs(volume_->mountpoint().c_str(), &s), 0);
  EXPECT_LE(s.f_ffree, s.f_files) << "statfs: more free inodes than inodes";
  int status = volume_->unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "unmount of a full volume: wait status " << status;
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  char last[64];
  std::snprintf(last, sizeof last, "/many/entry-%07d-with-a-longer-name", created - 1);
  EXPECT_EQ(::access(at(last).c_str(), F_OK), 0) << "the last file created before ENOSPC is gone";
}

}  // namespace
}  // namespace peregrine::fstest
