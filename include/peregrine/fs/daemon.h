// The mount daemon: assembles the volume, starts the engine and the
// metadata layer, mounts the FUSE filesystem and serves it until unmount or
// SIGTERM/SIGINT/SIGHUP; then drains IO, checkpoints, flushes and returns.
//
// Thread rules: run_daemon() is called once, on the main thread of a
// process that has no other threads yet (it may have forked to become a
// daemon); it starts the engine's drive threads and the FUSE workers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "peregrine/config/settings.h"
#include "peregrine/util/result.h"

namespace peregrine::fs {

struct DaemonOptions {
  std::vector<std::string> members;  // any order
  std::string mountpoint;
  // The mount's source in the mount table (what df and findmnt show, and
  // what mount -a matches an fstab line against): what the user wrote as
  // the source (mount(8)'s SPEC, a volume NAME). Empty: "peregrine:LABEL",
  // or "peregrine:UUID" for a volume without a label.
  std::string source;
  config::Settings settings = config::Settings::defaults();
  bool foreground = false;  // log to stderr rather than syslog
  // -o ro: members opened read-only, the kernel mount read-only, and
  // nothing written (a dirty journal is applied in memory only).
  bool read_only = false;
  bool norecovery = false;  // with read_only: the journal is not applied at all
  // Generic flags for the kernel's mount ("noexec", "noatime"; mount_flags.h).
  std::vector<std::string> kernel_options;
  // Called exactly once: Status::ok() when the filesystem is mounted and
  // serving, or the error that stopped startup (nothing was written then).
  std::function<void(const Status&)> on_ready;
  // Called once, on the main thread, when serving has ended (unmount or a
  // signal) and the daemon starts to drain, checkpoint and flush. Optional.
  std::function<void()> on_stopping;
};

// Returns the process exit code: 0 after a clean unmount, 1 on failure.
int run_daemon(const DaemonOptions& options);

}  // namespace peregrine::fs
