// peregrine mount: assemble a volume and serve it as a FUSE filesystem.
//
//   peregrine mount [--config FILE] [-o key=value,...] [-f] [--pid-file F] MEMBER... MOUNTPOINT
//   peregrine mount [--config FILE] [-o ...] [-f] NAME [MOUNTPOINT]   (a [volume.NAME] of the config)
//
// Without --config (or config=FILE) the file is $PEREGRINE_CONFIG, else
// /etc/peregrine/peregrine.conf when it exists (config_path.h).
//
// Without --foreground the command forks; the parent waits until the child
// is mounted and serving (exit 0) or has failed (its message, exit 1), so
// scripts and mount(8) can rely on the exit code. In the foreground under
// systemd (Type=notify, $NOTIFY_SOCKET set) it reports READY=1 once the
// filesystem serves and STOPPING=1 when the unmount begins; sd_notify does
// nothing when the variable is unset.
//
// When serving ends, the daemon marks its members exiting (member_lock.h)
// before it drains, checkpoints and flushes: a `peregrine mount` or fsck
// started meanwhile waits for it to exit rather than refusing.
#include <fcntl.h>
#include <systemd/sd-daemon.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "mount_table.h"
#include "peregrine/config/config_path.h"
#include "peregrine/config/mount_flags.h"
#include "peregrine/config/overrides.h"
#include "peregrine/fs/daemon.h"
#include "peregrine/volume/member_lock.h"

namespace po = boost::program_options;

namespace peregrine::cli {
namespace {

constexpr const char* kUsage =
    "usage: peregrine mount [OPTIONS] MEMBER... MOUNTPOINT\n"
    "       peregrine mount [OPTIONS] NAME [MOUNTPOINT]\n\n"
    "Assembles the volume whose members are given (in any order), or the volume\n"
    "NAME of the configuration file, and mounts it at MOUNTPOINT. Returns once the\n"
    "filesystem is serving. Unmount with 'umount MOUNTPOINT' (or fusermount3 -u,\n"
    "or SIGTERM to the daemon): it drains IO, checkpoints and exits.\n\n";

// Serving has ended: the members stay locked while the daemon checkpoints
// and flushes; the mark lets a mount or fsck started meanwhile wait for
// this process instead of refusing (member_lock.h).
void mark_exiting(const fs::DaemonOptions& d) {
  if (Status s = mark_members_exiting(d.members); !s)
    std::fprintf(stderr, "peregrine mount: warning: %s\n", s.message().c_str());
}

// The mount flags of a [volume.NAME] (ro, noexec...) come before the
// command line's, as its settings do.
Status take_volume_flags(const config::VolumeSpec& v, config::MountRequest& request) {
  auto flags = config::parse_mount_options(v.options, v.options_origin.to_string() + " (volume." + v.name + ".options)");
  if (!flags) return flags.status();
  flags->add(request);
  request = std::move(*flags);
  return Status::ok();
}

int report_and_exit(const Status& s) {
  std::fprintf(stderr, "peregrine mount: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int cmd_mount(int argc, char** argv) {
  std::string config_path;
  std::vector<std::string> option_strings;
  std::string pid_file;
  bool foreground = false;
  bool force_over = false;
  std::string source;
  std::vector<std::string> positional;
  po::options_description desc("options");
  // Boost breaks a line at a space only in the second half of the column,
  // else mid-word: the default path starts past the middle, so it moves to
  // the next line whole.
  desc.add_options()("help,h", "print this help")(
      "config,c", po::value(&config_path)->value_name("FILE"),
      "configuration file (by default $PEREGRINE_CONFIG, else /etc/peregrine/peregrine.conf, read when it exists)")(
      "options,o", po::value(&option_strings)->composing()->value_name("KEY=VALUE,..."),
      "settings (e.g. -o fuse.cache=writeback; see 'peregrine config defaults') and mount options "
      "(ro, noexec, ...; see mount.peregrine(8))")(
      "foreground,f", po::bool_switch(&foreground), "stay in the foreground and log to stderr")(
      "pid-file", po::value(&pid_file)->value_name("FILE"),
      "write the daemon's process id to FILE (removed when the daemon exits)")(
      "force", po::bool_switch(&force_over), "mount even over a live peregrine mount (which it hides)")(
      "source", po::value(&source)->value_name("TEXT"),
      "the source the mount table shows (df, findmnt; mount -a compares it with fstab's); by default NAME, "
      "or peregrine:LABEL when members are given (mount.peregrine passes the source mount(8) was given)");
  po::variables_map vm;
  std::string error;
  if (!parse_command_line(argc, argv, desc, &vm, &positional, &error)) {
    std::fprintf(stderr, "peregrine mount: %s\n\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << desc << "\n";
    return 0;
  }

  // -o: settings and generic mount flags, through the one parser that
  // mount.peregrine and volume options use too (mount_flags.h).
  config::MountRequest request;
  for (const std::string& s : option_strings) {
    auto parsed = config::parse_mount_options(s);
    if (!parsed) return report_and_exit(parsed.status());
    request.add(*parsed);
  }
  const std::vector<std::string> settings = request.settings;

  // Configuration: file (if any; config_path.h says which), then -o on top.
  auto loaded = config::load_chosen(config::choose_config(config_path.empty() ? request.config_file : config_path));
  if (!loaded) return report_and_exit(loaded.status());
  config::Config cfg = std::move(*loaded);

  fs::DaemonOptions d;
  d.foreground = foreground;
  // NAME [MOUNTPOINT] when NAME is a volume of the config, or looks like one
  // (no such file, no path or list in it) and cannot be a member list: one
  // word, or two words after a config file was read.
  bool volume_name = false;
  if (positional.size() >= 1 && positional.size() <= 2) {
    const std::string& first = positional[0];
    struct stat first_st {};
    volume_name = cfg.find_volume(first) != nullptr ||
                  (first.find_first_of("/,") == std::string::npos && ::stat(first.c_str(), &first_st) != 0 &&
                   errno == ENOENT && (positional.size() == 1 || !cfg.source.empty()));
  }
  if (volume_name) {
    auto named = config::for_volume(cfg, positional[0], settings);
    if (!named && positional.size() == 2)
      return report_and_exit(Status::error(named.status().errnum(), named.status().message() + "; and no member file " +
                                                                     positional[0] + " exists"));
    if (!named) return report_and_exit(named.status());
    const config::VolumeSpec* v = named->find_volume(positional[0]);
    d.members = v->members;
    d.mountpoint = positional.size() == 2 ? positional[1] : v->mountpoint;
    if (d.mountpoint.empty())
      return report_and_exit(Status::error(EINVAL, "volume " + positional[0] + ": no mountpoint given or configured"));
    d.settings = named->settings;
    d.source = positional[0];
    if (Status s = take_volume_flags(*v, request); !s) return report_and_exit(s);
  } else {
    if (positional.size() < 2) {
      std::fprintf(stderr, "peregrine mount: give at least one member and a mountpoint\n\n%s", kUsage);
      return 2;
    }
    if (Status s = config::apply_overrides(cfg, settings); !s) return report_and_exit(s);
    d.members.assign(positional.begin(), positional.end() - 1);
    d.mountpoint = positional.back();
    d.settings = cfg.settings;
  }
  if (!source.empty()) d.source = source;
  if (Status s = config::check_mount_request(request); !s) return report_and_exit(s);
  d.read_only = request.is_read_only();
  d.norecovery = request.norecovery;
  d.kernel_options = request.kernel;
  // The daemon changes directory; fix relative paths now.
  for (std::string& m : d.members) m = absolute_path(m);
  d.mountpoint = absolute_path(d.mountpoint);
  if (!pid_file.empty()) pid_file = absolute_path(pid_file);
  if (Status s = check_mountpoint(d.mountpoint, force_over); !s) return report_and_exit(s);

  // The pid file names a running daemon: written once it serves, removed
  // when it exits (whatever the exit code: the process is gone either way).
  bool pid_written = false;
  auto write_pid = [&] {
    if (pid_file.empty()) return;
    std::ofstream(pid_file) << getpid() << "\n";
    pid_written = true;
  };
  auto run_and_remove_pid = [&] {
    int rc = fs::run_daemon(d);
    if (pid_written) ::unlink(pid_file.c_str());
    return rc;
  };

  if (foreground) {
    d.on_ready = [&](const Status& s) {
      if (!s) {
        std::fprintf(stderr, "peregrine mount: %s\n", s.message().c_str());
        sd_notifyf(0, "STATUS=failed: %s", s.message().c_str());
        return;
      }
      write_pid();
      sd_notifyf(0, "READY=1\nSTATUS=serving %s", d.mountpoint.c_str());
    };
    d.on_stopping = [&] {
      mark_exiting(d);
      sd_notifyf(0, "STOPPING=1\nSTATUS=unmounting %s: draining, checkpointing, flushing", d.mountpoint.c_str());
    };
    return run_and_remove_pid();
  }

  // Daemon: the child reports "OK" or the error through a pipe.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return report_and_exit(Status::error(errno, "pipe failed"));
  pid_t pid = ::fork();
  if (pid < 0) return report_and_exit(Status::error(errno, "fork failed"));
  if (pid > 0) {
    ::close(pipefd[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) msg.append(buf, static_cast<size_t>(n));
    }
    ::close(pipefd[0]);
    if (msg == "OK") return 0;
    if (msg.empty()) msg = "the daemon exited during startup";
    std::fprintf(stderr, "peregrine mount: %s\n", msg.c_str());
    int status = 0;
    ::waitpid(pid, &status, 0);
    return 1;
  }
  ::close(pipefd[0]);
  ::setsid();
  if (::chdir("/") != 0) {
    // Paths are absolute already; staying put only keeps a directory busy.
  }
  d.on_stopping = [&] { mark_exiting(d); };
  int report_fd = pipefd[1];
  d.on_ready = [&](const Status& s) {
    std::string msg = s ? "OK" : s.message();
    if (s) write_pid();
    ssize_t w = ::write(report_fd, msg.data(), msg.size());
    (void)w;  // the parent may have died; nothing to tell then
    ::close(report_fd);
    if (s) {
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
        if (null > 2) ::close(null);
      }
    }
  };
  std::_Exit(run_and_remove_pid());
}

}  // namespace peregrine::cli
