// DaemonLog: where the daemon's messages go and from which priority on
// (log.target, log.level): stderr, syslog, or (tests only) the datagram
// socket PEREGRINE_TEST_SYSLOG_SOCKET names, so that a test sees what a
// background daemon logged without a syslog daemon on the machine. One
// per daemon: run_daemon makes it and hands it, or a LogLine of it
// (util/log_line.h), to whatever logs.
//
// Thread rules: made before any other thread starts; line() and log()
// from any thread, each message one write.
#pragma once

#include <string>

#include "peregrine/config/settings.h"
#include "peregrine/util/log_line.h"

namespace peregrine::fs {

class DaemonLog {
 public:
  // log.target auto means syslog for a background daemon (it has no
  // stderr once it serves), stderr in the foreground (a systemd unit's
  // stderr is the journal).
  DaemonLog(const config::LogSettings& settings, bool foreground);
  ~DaemonLog();
  DaemonLog(const DaemonLog&) = delete;
  DaemonLog& operator=(const DaemonLog&) = delete;

  void line(int priority, const std::string& text) const;
  void log(int priority, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));
  // A LogLine that writes here; valid while this DaemonLog lives.
  LogLine as_line() const {
    return [this](int priority, const std::string& text) { line(priority, text); };
  }

 private:
  bool to_syslog_ = false;
  int max_priority_;
  int test_socket_ = -1;  // the test's syslog socket, when one is named
};

}  // namespace peregrine::fs
