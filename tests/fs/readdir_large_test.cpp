// readdir of a directory with 100,000 entries returns every name exactly
// once (getdents continues correctly across many buffers and offsets).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <unordered_map>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class ReaddirLargeTest : public MountedTest {
 protected:
  // 100k inodes and names need more than the default 16 MiB metadata area
  // of a 256 MiB volume (a checkpoint of ~50k files fills a slot).
  std::vector<std::string> mkfs_options() override { return {"--meta-size", "64M"}; }
};

constexpr int kEntries = 100000;

std::string name_of(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "entry-%06d-with-a-longer-name", i);
  return buf;
}

TEST_F(ReaddirLargeTest, HundredThousandEntriesEachListedOnce) {
  const std::string dir = at("big");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  // mknod makes a regular file in one request (no open/release pair).
  for (int i = 0; i < kEntries; ++i)
    ASSERT_EQ(::mknod((dir + "/" + name_of(i)).c_str(), S_IFREG | 0644, 0), 0) << name_of(i) << ": " << errno;

  std::unordered_map<std::string, int> seen;
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    ++seen[e->d_name];
    if (e->d_name[0] == 'e') {
      EXPECT_TRUE(e->d_type == DT_REG || e->d_type == DT_UNKNOWN) << e->d_name;
    }
  }
  EXPECT_EQ(errno, 0);
  ::closedir(d);

  EXPECT_EQ(seen.size(), size_t{kEntries} + 2);
  EXPECT_EQ(seen["."], 1);
  EXPECT_EQ(seen[".."], 1);
  int missing = 0, repeated = 0;
  for (int i = 0; i < kEntries; ++i) {
    auto it = seen.find(name_of(i));
    if (it == seen.end())
      ++missing;
    else if (it->second != 1)
      ++repeated;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(repeated, 0);

  // Removing every other entry, then listing again, still lists the rest once.
  for (int i = 0; i < kEntries; i += 2) ASSERT_EQ(::unlink((dir + "/" + name_of(i)).c_str()), 0);
  seen.clear();
  d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  while (struct dirent* e = ::readdir(d)) ++seen[e->d_name];
  ::closedir(d);
  EXPECT_EQ(seen.size(), size_t{kEntries / 2} + 2);
  int wrong = 0;
  for (int i = 1; i < kEntries; i += 2) wrong += seen[name_of(i)] != 1;
  EXPECT_EQ(wrong, 0) << "remaining entries missing or listed twice";
}

}  // namespace
}  // namespace peregrine::fstest
