#include "open_files_sync.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "peregrine/fs/open_files_xattr.h"

namespace peregrine::cli {
namespace {

using fs::kOpenFilesAfter;
using fs::kOpenFilesPageBytes;
using fs::kOpenFilesXattr;

// A file renamed between the listing and its open is looked for again by
// its new name, this many times.
constexpr int kPasses = 3;

// The whole list, page by page: inode -> path relative to the root.
Status list_open_files(int root_fd, const std::string& root, std::map<uint64_t, std::string>* out) {
  out->clear();
  std::vector<char> page(kOpenFilesPageBytes);
  uint64_t after = 0;
  for (;;) {
    std::string name = kOpenFilesXattr;
    if (after != 0) name += kOpenFilesAfter + std::to_string(after);
    ssize_t n = ::fgetxattr(root_fd, name.c_str(), page.data(), page.size());
    if (n < 0) {
      int e = errno;
      // A daemon of an older release keeps no such list: nothing to add.
      if (e == ENODATA && after == 0) return Status::ok();
      return Status::error(e, root + ": cannot read the files open for writing (" + name + "): " + std::strerror(e));
    }
    if (n == 0) return Status::ok();
    const char* at = page.data();
    const char* end = page.data() + n;
    while (at < end) {
      const char* tab = static_cast<const char*>(std::memchr(at, '\t', end - at));
      const char* nul = tab ? static_cast<const char*>(std::memchr(tab, '\0', end - tab)) : nullptr;
      uint64_t ino = 0;
      auto [stop, ec] = std::from_chars(at, tab ? tab : end, ino);
      if (nul == nullptr || ec != std::errc() || stop != tab || ino <= after) {
        return Status::error(EPROTO, root + ": the daemon's list of files open for writing is malformed");
      }
      (*out)[ino] = std::string(tab + 1, nul);
      after = ino;
      at = nul + 1;
    }
  }
}

enum class Outcome { kSynced, kMoved, kFailed };

// Opens `path` beneath the root one name at a time, following no symlink
// and entering no other mount on the way (each directory's device is
// checked): run as root, the command must not be led by another user's
// renames to open a device elsewhere. O_NONBLOCK: the name may meanwhile
// be a FIFO's, whose open would wait. O_NOATIME: syncing a file is not
// reading it (the owner and root may ask for it). -1 and errno on failure.
int open_beneath(int root_fd, dev_t dev, const std::string& path) {
  const int file_flags = O_RDONLY | O_NOATIME | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
  int dir = root_fd;
  auto leave = [&](int fd, int err) {
    if (dir != root_fd) ::close(dir);
    errno = err;
    return fd;
  };
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    const std::string name = path.substr(start, slash == std::string::npos ? slash : slash - start);
    if (name.empty() || name == "." || name == "..") return leave(-1, ENOENT);  // the daemon sends none
    if (slash == std::string::npos) {
      int fd = ::openat(dir, name.c_str(), file_flags);
      if (fd < 0 && errno == EPERM) fd = ::openat(dir, name.c_str(), file_flags & ~O_NOATIME);  // not the owner
      return leave(fd, errno);
    }
    const int next = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return leave(-1, errno);
    struct stat st;
    if (::fstat(next, &st) != 0 || st.st_dev != dev) {
      ::close(next);
      return leave(-1, EXDEV);
    }
    if (dir != root_fd) ::close(dir);
    dir = next;
    start = slash + 1;
  }
}

// fsyncs `path` if it still is inode `ino` of the volume (device `dev`).
Outcome fsync_one(int root_fd, dev_t dev, const std::string& root, uint64_t ino, const std::string& path,
                  Status* error) {
  const std::string shown = root + "/" + path;
  const std::string advice = "; fsync it yourself (from the program that writes it, or as root)";
  if (path.empty()) {
    *error = Status::error(ENAMETOOLONG, root + ": inode " + std::to_string(ino) +
                                             " is open for writing under a path longer than PATH_MAX" + advice);
    return Outcome::kFailed;
  }
  int fd = open_beneath(root_fd, dev, path);
  if (fd < 0) {
    int e = errno;
    // Gone or renamed since the listing, now a symlink on the way or a
    // socket (ENXIO): look again by the next list.
    if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == ENXIO) return Outcome::kMoved;
    std::string why = std::strerror(e);
    if (e == EXDEV) why = "it lies under another filesystem mounted on the volume";
    if (e == EWOULDBLOCK) why = "another program holds a lease on it (the open asked it to let go)";
    *error = Status::error(e, shown + ": cannot open it to fsync: " + why + advice);
    return Outcome::kFailed;
  }
  struct stat st;
  Outcome out = Outcome::kSynced;
  if (::fstat(fd, &st) != 0 || st.st_ino != ino || st.st_dev != dev || !S_ISREG(st.st_mode)) {
    out = Outcome::kMoved;
  } else if (::fsync(fd) != 0) {
    int e = errno;
    *error = Status::error(e, shown + ": fsync failed: " + std::strerror(e));
    out = Outcome::kFailed;
  }
  ::close(fd);
  return out;
}

}  // namespace

Status fsync_files_open_for_writing(int root_fd, const std::string& root) {
  struct stat root_st;
  if (::fstat(root_fd, &root_st) != 0) {
    int e = errno;
    return Status::error(e, root + ": cannot stat the mount root: " + std::strerror(e));
  }
  std::set<uint64_t> done;
  Status first_error = Status::ok();
  std::map<uint64_t, std::string> moved;
  for (int pass = 0; pass < kPasses; ++pass) {
    std::map<uint64_t, std::string> open_files;
    if (Status st = list_open_files(root_fd, root, &open_files); !st) return first_error ? st : first_error;
    moved.clear();
    for (const auto& [ino, path] : open_files) {
      if (done.count(ino) != 0) continue;
      Status error = Status::ok();
      switch (fsync_one(root_fd, root_st.st_dev, root, ino, path, &error)) {
        case Outcome::kSynced:
          done.insert(ino);
          break;
        case Outcome::kMoved:
          moved.emplace(ino, path);
          break;
        case Outcome::kFailed:
          done.insert(ino);
          if (first_error) first_error = error;
          break;
      }
    }
    // A file missed because it was closed meanwhile is off the next list.
    if (moved.empty()) break;
  }
  if (!first_error) return first_error;
  if (!moved.empty()) {
    return Status::error(EAGAIN, root + "/" + moved.begin()->second +
                                     ": kept moving while open for writing; fsync it yourself");
  }
  return Status::ok();
}

}  // namespace peregrine::cli
