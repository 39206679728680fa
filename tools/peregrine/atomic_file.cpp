// Atomic replacement of a file (atomic_file.h).
#include "atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "peregrine/util/full_io.h"

namespace peregrine::cli {
namespace {

Status fail(const std::string& what, int e) { return Status::error(e, what + ": " + std::strerror(e)); }

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status replace_file(const std::string& path, std::string_view content) {
  std::string tmp = path + ".tmp.XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return fail("cannot create a temporary file beside " + path, errno);
  tmp = name.data();
  auto abandon = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(what, e);
  };
  // mkstemp makes the file 0600; the collector usually runs as another
  // user, so give it the mode any new file would get.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return abandon("cannot set the mode of " + tmp, errno);
  if (int rc = write_full(fd, content.data(), content.size()); rc < 0) return abandon("cannot write " + tmp, -rc);
  // Durable before it is visible: after a crash the name holds the old
  // file or the whole new one, not an empty one.
  if (::fsync(fd) != 0) return abandon("cannot fsync " + tmp, errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("cannot close " + tmp, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("cannot rename " + tmp + " to " + path, e);
  }
  // The rename itself survives a crash only once the directory is synced.
  std::string dir = directory_of(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail("cannot open directory " + dir + " to fsync it", errno);
  int rc = ::fsync(dfd);
  int e = errno;
  ::close(dfd);
  if (rc != 0) return fail("cannot fsync directory " + dir, e);
  return Status::ok();
}

}  // namespace peregrine::cli
