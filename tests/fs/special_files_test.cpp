// Special files (FIFOs, device nodes, sockets) side by side with a native
// directory: created with the same type, mode and device number, and a FIFO
// on the mount passes data (it is served by the kernel, not the daemon).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using SpecialFilesTest = SideBySideTest;

TEST_F(SpecialFilesTest, FifoDeviceNodeSocket) {
  same("mkfifo", [](const std::string& r) { return outcome(::mkfifo((r + "/fifo").c_str(), 0640)); });
  same("char device",
       [](const std::string& r) { return outcome(::mknod((r + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3))); });
  same("block device",
       [](const std::string& r) { return outcome(::mknod((r + "/blk").c_str(), S_IFBLK | 0600, makedev(7, 200))); });
  same("rdev", [](const std::string& r) {
    struct stat a, b;
    return ::lstat((r + "/null").c_str(), &a) < 0 || ::lstat((r + "/blk").c_str(), &b) < 0
               ? outcome(-1)
               : outcome(static_cast<long>(a.st_rdev * 1000003 + b.st_rdev));
  });
  same("socket", [](const std::string& r) {
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::string path = r + "/sock";
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    int rc = ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::close(s);
    return outcome(rc);
  });
  // A FIFO on the mount carries data between two descriptors.
  Fd rd(::open(at("fifo").c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(rd.ok());
  Fd wr(::open(at("fifo").c_str(), O_WRONLY));
  ASSERT_TRUE(wr.ok());
  ASSERT_EQ(::write(wr.get(), "through", 7), 7);
  char buf[16];
  ASSERT_EQ(::read(rd.get(), buf, sizeof buf), 7);
  EXPECT_EQ(std::string(buf, 7), "through");
  expect_same_trees();
}

}  // namespace
}  // namespace peregrine::fstest
