#include "transport.h"

#include <fcntl.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "fuse_wire.h"
#include "peregrine/util/test_hooks.h"
#include "session_io.h"
#include "uring_transport.h"

namespace peregrine::fs {
namespace {

constexpr const char* kEnableUringParam = "/sys/module/fuse/parameters/enable_uring";

}  // namespace

UringSupport probe_uring_support() {
  const char* override_path = test_hook("PEREGRINE_FUSE_URING_PARAM");
  std::string path = override_path != nullptr ? override_path : kEnableUringParam;
  if (override_path == nullptr) {
    // The fuse module may not be loaded before the first mount: opening
    // /dev/fuse loads it (with its modprobe.d options).
    int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  std::ifstream in(path);
  std::string value;
  if (!in || !std::getline(in, value)) {
    return UringSupport{false, "this kernel has no FUSE over io_uring (" + path +
                                   " is missing: it needs Linux 6.14 or later built with CONFIG_FUSE_IO_URING)"};
  }
  if (value == "Y" || value == "1") return UringSupport{true, ""};
  return UringSupport{false, "the fuse module's enable_uring parameter is off (" + path + " reads " + value +
                                 "); as root, `echo 1 > " + path +
                                 "` enables it, or install the peregrine package, which does"};
}

ssize_t TransportHost::read_request(int fd, void* buf, size_t len, bool* may_stay_staged) {
  *may_stay_staged = false;
  return ::read(fd, buf, len);
}

Expected<TransportPlan> plan_transport(config::FuseTransport wanted) {
  switch (wanted) {
    case config::FuseTransport::kClassic: return TransportPlan{false, "fuse.transport = classic"};
    case config::FuseTransport::kIoUring: {
      UringSupport u = probe_uring_support();
      if (!u.offered) {
        return Status::error(EOPNOTSUPP, "fuse.transport = io-uring, but " + u.why_not +
                                             " (or set fuse.transport = auto to fall back to classic)");
      }
      return TransportPlan{true, ""};
    }
    case config::FuseTransport::kAuto: {
      UringSupport u = probe_uring_support();
      return TransportPlan{u.offered, u.why_not};
    }
  }
  return TransportPlan{false, "unknown fuse.transport"};
}

std::unique_ptr<Transport> Transport::create(TransportHost& host, const TransportPlan& plan, LogLine log,
                                             std::function<void()> serving) {
  if (plan.uring) return std::make_unique<UringTransport>(host, std::move(log), std::move(serving));
  log(LOG_INFO, "FUSE transport: classic (" + plan.reason + ")");
  // Shared writable mmap of direct-IO files needs FUSE_DIRECT_IO_ALLOW_MMAP
  // on either transport.
  return std::make_unique<SessionIo>(host, wire::kDirectIoAllowMmap, std::move(log));
}

}  // namespace peregrine::fs
