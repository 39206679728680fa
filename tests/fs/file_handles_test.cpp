// File handles (name_to_handle_at / open_by_handle_at, what NFS export
// uses) that outlive the kernel's inode cache: a handle taken before an
// unmount opens the same file, with the same data, on the next mount, and a
// directory's handle reconnects to its parent (the kernel looks up "." and
// ".." of the inode). A handle of a removed file is stale, side by side
// with ext4.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using Handle = std::unique_ptr<file_handle, void (*)(void*)>;

Handle handle_of(const std::string& path) {
  Handle h(static_cast<file_handle*>(std::calloc(1, sizeof(file_handle) + MAX_HANDLE_SZ)), std::free);
  h->handle_bytes = MAX_HANDLE_SZ;
  int mount_id;
  if (::name_to_handle_at(AT_FDCWD, path.c_str(), h.get(), &mount_id, 0) != 0) return Handle(nullptr, std::free);
  return h;
}

Fd open_handle(const std::string& mountpoint, file_handle* h, int flags) {
  Fd mount_fd(::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY));
  return Fd(::open_by_handle_at(mount_fd.get(), h, flags));
}

ino_t ino_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

class FileHandlesTest : public SideBySideTest {};

TEST_F(FileHandlesTest, HandlesOpenTheSameFilesAfterARemount) {
  const std::string data = pattern(100000, 3);
  ASSERT_EQ(::mkdir(at("a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(at("a/b").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(at("a/b/c").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(at("a/b/file"), data));
  Handle file = handle_of(at("a/b/file"));
  Handle dir = handle_of(at("a/b/c"));
  ASSERT_TRUE(file && dir) << std::strerror(errno);
  struct stat fst {
  }, bst{};
  ASSERT_EQ(::stat(at("a/b/file").c_str(), &fst), 0);
  ASSERT_EQ(::stat(at("a/b").c_str(), &bst), 0);

  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();

  Fd f = open_handle(volume_->mountpoint(), file.get(), O_RDONLY);
  ASSERT_TRUE(f.ok()) << "open_by_handle_at(file): " << std::strerror(errno);
  EXPECT_EQ(ino_of(f.get()), fst.st_ino);
  EXPECT_EQ(read_at(f.get(), data.size() + 1, 0), data);
  Fd d = open_handle(volume_->mountpoint(), dir.get(), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(d.ok()) << "open_by_handle_at(dir): " << std::strerror(errno);
  Fd parent(::openat(d.get(), "..", O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(parent.ok()) << std::strerror(errno);
  EXPECT_EQ(ino_of(parent.get()), bst.st_ino);
  // Reconnected: the directory's path is known again.
  char path[PATH_MAX];
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(d.get())).c_str(), path, sizeof path - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(path, static_cast<size_t>(n)), at("a/b/c"));
}

TEST_F(FileHandlesTest, AHandleOfARemovedFileIsStale) {
  Outcome o = same("open_by_handle_at after unlink", [&](const std::string& root) {
    const std::string f = root + "/gone";
    if (!write_file(f, "x")) return outcome(-1);
    Handle h = handle_of(f);
    if (!h || ::unlink(f.c_str()) != 0) return outcome(-1);
    return outcome(open_handle(root, h.get(), O_RDONLY).get());
  });
  EXPECT_EQ(o.err, ESTALE);
}

TEST_F(FileHandlesTest, AHandleOfARemovedFileIsStaleAfterARemount) {
  ASSERT_TRUE(write_file(at("gone"), "x"));
  Handle h = handle_of(at("gone"));
  ASSERT_TRUE(h);
  ASSERT_EQ(::unlink(at("gone").c_str()), 0);
  ASSERT_EQ(volume_->unmount(), 0);
  RunResult r = volume_->mount();
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(write_file(at("new"), "y"));  // inode numbers are never reused
  Fd f = open_handle(volume_->mountpoint(), h.get(), O_RDONLY);
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(errno, ESTALE);
}

}  // namespace
}  // namespace peregrine::fstest
