#include "peregrine/backend/member_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "peregrine/util/full_io.h"

namespace peregrine {
namespace {

// Reads one integer from a sysfs attribute; returns `fallback` when absent.
long read_sysfs_long(const std::string& path, long fallback) {
  std::ifstream in(path);
  long v = fallback;
  if (!(in >> v)) return fallback;
  return v;
}

std::string sysfs_block_dir(dev_t rdev) {
  return "/sys/dev/block/" + std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
}

std::string errno_text(int e) { return std::strerror(e); }

// The member file `fd` once more, read-only and without O_DIRECT, or -1.
// The name is looked up again, so the new descriptor must name the file
// `fd` has open.
int open_page_cache_reader(const std::string& path, int fd) {
  const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader < 0) return -1;
  struct stat a {}, b {};
  if (::fstat(fd, &a) == 0 && ::fstat(reader, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return reader;
  ::close(reader);
  return -1;
}

// Whether a direct write to a file of this filesystem drops the cached
// pages it covers once it completes, even when it completed asynchronously
// (iomap's direct IO: ext4, XFS). Then a read through the page cache that
// raced the write and read the old bytes cannot leave them behind. A block
// device drops them only before an asynchronous write (block/fops.c), so
// such a read could cache old bytes for good: its members read direct.
bool drops_pages_after_async_direct_writes(long f_type) {
  return f_type == EXT4_SUPER_MAGIC || f_type == XFS_SUPER_MAGIC;
}

}  // namespace

Expected<MemberFile> MemberFile::open(const std::string& path, Mode mode) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    return Status::error(e, "member " + path + ": " + errno_text(e));
  }
  MemberInfo info;
  info.path = path;
  bool page_cache_reads = false;  // see drops_pages_after_async_direct_writes()
  int flags = O_DIRECT | O_CLOEXEC | (mode == Mode::read_write ? O_RDWR : O_RDONLY);
  if (S_ISBLK(st.st_mode)) {
    info.is_block_device = true;
    // Refuses a device that is mounted or claimed by another holder.
    if (mode != Mode::inspect) flags |= O_EXCL;
  } else if (!S_ISREG(st.st_mode)) {
    return Status::error(EINVAL, "member " + path + ": not a regular file or block device");
  }
  int fd = ::open(path.c_str(), flags);
  if (fd < 0 && errno == EINVAL && mode == Mode::inspect) fd = ::open(path.c_str(), flags & ~O_DIRECT);
  if (fd < 0) {
    int e = errno;
    if (e == EBUSY)
      return Status::error(e, "member " + path + ": device is busy (mounted or in use by another program)");
    if (e == EINVAL)
      return Status::error(e, "member " + path + ": the filesystem holding it does not support O_DIRECT");
    return Status::error(e, "member " + path + ": " + errno_text(e));
  }
  if (info.is_block_device) {
    uint64_t bytes = 0;
    int lbs = 0;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) != 0 || ::ioctl(fd, BLKSSZGET, &lbs) != 0) {
      int e = errno;
      ::close(fd);
      return Status::error(e, "member " + path + ": cannot read device geometry: " + errno_text(e));
    }
    info.size_bytes = bytes;
    info.logical_block_size = static_cast<uint32_t>(lbs);
    info.dev = st.st_rdev;
    std::string dir = sysfs_block_dir(st.st_rdev);
    // A partition's queue attributes live in its parent device's directory.
    long nr = read_sysfs_long(dir + "/queue/nr_requests", -1);
    if (nr < 0) nr = read_sysfs_long(dir + "/../queue/nr_requests", 0);
    info.queue_depth = static_cast<uint32_t>(nr);
    long node = read_sysfs_long(dir + "/device/numa_node", -1);
    if (node < 0) node = read_sysfs_long(dir + "/../device/numa_node", -1);
    info.numa_node = static_cast<int>(node);
  } else {
    info.size_bytes = static_cast<uint64_t>(st.st_size);
    info.dev = st.st_dev;
    info.logical_block_size = 4096;
    struct statfs fs {};
    if (::fstatfs(fd, &fs) == 0) {
      info.memory_backed = fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
      page_cache_reads = drops_pages_after_async_direct_writes(static_cast<long>(fs.f_type));
    }
  }
  info.ino = st.st_ino;
  MemberFile member(fd, std::move(info));
  if (mode != Mode::inspect && page_cache_reads) member.page_cache_fd_ = open_page_cache_reader(path, fd);
  return member;
}

MemberFile::MemberFile(MemberFile&& other) noexcept
    : fd_(other.fd_),
      page_cache_fd_(other.page_cache_fd_),
      info_(std::move(other.info_)),
      write_layer_(std::move(other.write_layer_)) {
  other.fd_ = -1;
  other.page_cache_fd_ = -1;
}

MemberFile& MemberFile::operator=(MemberFile&& other) noexcept {
  if (this != &other) {
    close_all();
    fd_ = other.fd_;
    page_cache_fd_ = other.page_cache_fd_;
    info_ = std::move(other.info_);
    write_layer_ = std::move(other.write_layer_);
    other.fd_ = -1;
    other.page_cache_fd_ = -1;
  }
  return *this;
}

MemberFile::~MemberFile() { close_all(); }

void MemberFile::close_all() {
  if (fd_ >= 0) ::close(fd_);
  if (page_cache_fd_ >= 0) ::close(page_cache_fd_);
}

int MemberFile::pread_full(void* buf, uint64_t len, uint64_t offset) const {
  ssize_t n = peregrine::pread_upto(fd_, buf, len, offset);
  if (n < 0) return static_cast<int>(n);
  return static_cast<uint64_t>(n) == len ? 0 : -EIO;  // past the end of the member
}

int MemberFile::pwrite_full(const void* buf, uint64_t len, uint64_t offset) const {
  if (write_layer_) {
    // The layer only reads from a write's buffer.
    const int64_t n =
        write_layer_->transfer_blocking(IoOp::write, offset, static_cast<std::byte*>(const_cast<void*>(buf)), len);
    return n < 0 ? static_cast<int>(n) : (static_cast<uint64_t>(n) == len ? 0 : -EIO);
  }
  return peregrine::pwrite_full(fd_, buf, len, offset);
}

int MemberFile::sync() const {
  if (write_layer_) return write_layer_->flush_blocking();
  return ::fdatasync(fd_) == 0 ? 0 : -errno;
}

}  // namespace peregrine
