#include "daemon_log.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "peregrine/util/test_hooks.h"

namespace peregrine::fs {
namespace {

constexpr const char* kTestSyslogEnv = "PEREGRINE_TEST_SYSLOG_SOCKET";

int priority_of(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kError: return LOG_ERR;
    case config::LogLevel::kWarn: return LOG_WARNING;
    case config::LogLevel::kInfo: return LOG_INFO;
    case config::LogLevel::kDebug: return LOG_DEBUG;
  }
  return LOG_INFO;
}

// The test's socket, connected, or -1 (then syslog(3) is opened).
int open_syslog() {
  if (const char* path = test_hook(kTestSyslogEnv); path != nullptr && *path != '\0') {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
  }
  openlog("peregrine", LOG_PID, LOG_DAEMON);
  return -1;
}

std::string format_line(const char* fmt, va_list ap) {
  va_list measure;
  va_copy(measure, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, measure);
  va_end(measure);
  std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  std::vsnprintf(line.data(), line.size() + 1, fmt, ap);
  return line;
}

}  // namespace

DaemonLog::DaemonLog(const config::LogSettings& settings, bool foreground)
    : max_priority_(priority_of(settings.level)) {
  switch (settings.target) {
    case config::LogTarget::kAuto: to_syslog_ = !foreground; break;
    case config::LogTarget::kStderr: to_syslog_ = false; break;
    case config::LogTarget::kSyslog: to_syslog_ = true; break;
  }
  if (to_syslog_) test_socket_ = open_syslog();
  if (!foreground && settings.target == config::LogTarget::kStderr)
    std::fprintf(stderr,
                 "peregrine mount: warning: log.target = stderr in the background: the daemon's log is "
                 "discarded once it serves (use auto or syslog, or --foreground)\n");
}

DaemonLog::~DaemonLog() {
  if (test_socket_ >= 0) ::close(test_socket_);
}

void DaemonLog::line(int priority, const std::string& text) const { log(priority, "%s", text.c_str()); }

void DaemonLog::log(int priority, const char* fmt, ...) const {
  if (priority > max_priority_) return;
  va_list ap;
  va_start(ap, fmt);
  if (!to_syslog_) {
    // One write per message (the stats thread logs beside the main thread),
    // sized to the message: paths in it can be long.
    std::fprintf(stderr, "peregrine: %s\n", format_line(fmt, ap).c_str());
  } else if (test_socket_ >= 0) {
    // The syslog wire format (RFC 3164 without the timestamp): <PRI>TAG[PID]: MSG
    std::string line = "<" + std::to_string(LOG_DAEMON | priority) + ">peregrine[" + std::to_string(::getpid()) +
                       "]: " + format_line(fmt, ap);
    ssize_t w = ::send(test_socket_, line.data(), line.size(), 0);
    (void)w;  // as syslog(3): a lost line is not an error of the daemon
  } else {
    vsyslog(priority, fmt, ap);
  }
  va_end(ap);
}

}  // namespace peregrine::fs
