// The count of handles open for writing behind `peregrine sync`'s list:
// a file stays listed while any of its write handles is open, in inode
// order, and the list resumes after a given inode.
#include "write_open_files.h"

#include <gtest/gtest.h>

#include <vector>

namespace peregrine::fs {
namespace {

TEST(WriteOpenFilesTest, AFileIsListedUntilItsLastWriteHandleIsReleased) {
  WriteOpenFiles files;
  EXPECT_TRUE(files.list(0).empty());
  files.opened(9);
  files.opened(3);
  files.opened(9);
  EXPECT_EQ(files.list(0), (std::vector<uint64_t>{3, 9}));
  files.released(9);
  EXPECT_EQ(files.list(0), (std::vector<uint64_t>{3, 9})) << "9 has a second writer";
  files.released(9);
  EXPECT_EQ(files.list(0), (std::vector<uint64_t>{3}));
  files.released(9);  // a release it never counted changes nothing
  files.released(3);
  EXPECT_TRUE(files.list(0).empty());
}

TEST(WriteOpenFilesTest, TheListResumesAfterAnInode) {
  WriteOpenFiles files;
  for (uint64_t ino : {5, 1, 7, 3}) files.opened(ino);
  EXPECT_EQ(files.list(3), (std::vector<uint64_t>{5, 7}));
  EXPECT_EQ(files.list(7), (std::vector<uint64_t>{}));
}

}  // namespace
}  // namespace peregrine::fs
