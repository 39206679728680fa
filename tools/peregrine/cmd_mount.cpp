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
#include <optional>
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
  auto flags =
      config::parse_mount_options(v.options, v.options_origin.to_string() + " (volume." + v.name + ".options)");
  if (!flags) return flags.status();
  flags->add(request);
  request = std::move(*flags);
  return Status::ok();
}

int report_and_exit(const Status& s) {
  std::fprintf(stderr, "peregrine mount: %s\n", s.message().c_str());
  return 1;
}

struct MountArgs {
  std::string config_path;
  std::vector<std::string> option_strings;
  std::string pid_file;
  bool foreground = false;
  bool force_over = false;
  std::string source;
  std::vector<std::string> positional;
};

// The command line; an exit code when there is nothing more to do (help,
// or a usage error).
std::optional<int> parse_mount_args(int argc, char** argv, MountArgs* a) {
  po::options_description desc("options");
  // Boost breaks a line at a space only in the second half of the column,
  // else mid-word: the default path starts past the middle, so it moves to
  // the next line whole.
  desc.add_options()("help,h", "print this help")(
      "config,c", po::value(&a->config_path)->value_name("FILE"),
      "configuration file (by default $PEREGRINE_CONFIG, else /etc/peregrine/peregrine.conf, read when it exists)")(
      "options,o", po::value(&a->option_strings)->composing()->value_name("KEY=VALUE,..."),
      "settings (e.g. -o fuse.cache=writeback; see 'peregrine config defaults') and mount options "
      "(ro, noexec, ...; see mount.peregrine(8))")("foreground,f", po::bool_switch(&a->foreground),
                                                   "stay in the foreground and log to stderr")(
      "pid-file", po::value(&a->pid_file)->value_name("FILE"),
      "write the daemon's process id to FILE (removed when the daemon exits)")(
      "force", po::bool_switch(&a->force_over), "mount even over a live peregrine mount (which it hides)")(
      "source", po::value(&a->source)->value_name("TEXT"),
      "the source the mount table shows (df, findmnt; mount -a compares it with fstab's); by default NAME, "
      "or peregrine:LABEL when members are given (mount.peregrine passes the source mount(8) was given)");
  po::variables_map vm;
  std::string error;
  if (!parse_command_line(argc, argv, desc, &vm, &a->positional, &error)) {
    std::fprintf(stderr, "peregrine mount: %s\n\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (vm.count("help")) {
    std::cout << kUsage << desc << "\n";
    return 0;
  }
  return std::nullopt;
}

// -o: settings and generic mount flags, through the one parser that
// mount.peregrine and volume options use too (mount_flags.h).
Expected<config::MountRequest> parse_mount_request(const std::vector<std::string>& option_strings) {
  config::MountRequest request;
  for (const std::string& s : option_strings) {
    auto parsed = config::parse_mount_options(s);
    if (!parsed) return parsed.status();
    request.add(*parsed);
  }
  return request;
}

// NAME [MOUNTPOINT] when NAME is a volume of the config, or looks like one
// (no such file, no path or list in it) and cannot be a member list: one
// word, or two words after a config file was read.
bool names_a_volume(const std::vector<std::string>& positional, const config::Config& cfg) {
  if (positional.empty() || positional.size() > 2) return false;
  const std::string& first = positional[0];
  struct stat first_st {};
  return cfg.find_volume(first) != nullptr ||
         (first.find_first_of("/,") == std::string::npos && ::stat(first.c_str(), &first_st) != 0 && errno == ENOENT &&
          (positional.size() == 1 || !cfg.source.empty()));
}

// Members, mount point, settings and source of the [volume.NAME] the
// command line names; its mount flags go before the command line's.
Status take_named_volume(const std::vector<std::string>& positional, const config::Config& cfg,
                         const std::vector<std::string>& settings, config::MountRequest& request,
                         fs::DaemonOptions& d) {
  auto named = config::for_volume(cfg, positional[0], settings);
  if (!named && positional.size() == 2)
    return Status::error(named.status().errnum(),
                         named.status().message() + "; and no member file " + positional[0] + " exists");
  if (!named) return named.status();
  const config::VolumeSpec* v = named->find_volume(positional[0]);
  d.members = v->members;
  d.mountpoint = positional.size() == 2 ? positional[1] : v->mountpoint;
  if (d.mountpoint.empty())
    return Status::error(EINVAL, "volume " + positional[0] + ": no mountpoint given or configured");
  d.settings = named->settings;
  d.source = positional[0];
  return take_volume_flags(*v, request);
}

// What the volume is: a [volume.NAME] of the config, or MEMBER...
// MOUNTPOINT with the config's settings and -o's on top. An exit code when
// it cannot be mounted.
std::optional<int> choose_volume(const std::vector<std::string>& positional, config::Config& cfg,
                                 config::MountRequest& request, fs::DaemonOptions& d) {
  const std::vector<std::string> settings = request.settings;
  if (names_a_volume(positional, cfg)) {
    if (Status s = take_named_volume(positional, cfg, settings, request, d); !s) return report_and_exit(s);
    return std::nullopt;
  }
  if (positional.size() < 2) {
    std::fprintf(stderr, "peregrine mount: give at least one member and a mountpoint\n\n%s", kUsage);
    return 2;
  }
  if (Status s = config::apply_overrides(cfg, settings); !s) return report_and_exit(s);
  d.members.assign(positional.begin(), positional.end() - 1);
  d.mountpoint = positional.back();
  d.settings = cfg.settings;
  return std::nullopt;
}

// The mount flags into the daemon's options; paths made absolute (the
// daemon changes directory) and the mount point checked.
Status finish_daemon_options(MountArgs& a, const config::MountRequest& request, fs::DaemonOptions& d) {
  if (!a.source.empty()) d.source = a.source;
  if (Status s = config::check_mount_request(request); !s) return s;
  d.read_only = request.is_read_only();
  d.norecovery = request.norecovery;
  d.kernel_options = request.kernel;
  for (std::string& m : d.members) m = absolute_path(m);
  d.mountpoint = absolute_path(d.mountpoint);
  if (!a.pid_file.empty()) a.pid_file = absolute_path(a.pid_file);
  return check_mountpoint(d.mountpoint, a.force_over);
}

// The pid file names a running daemon: written once it serves, removed
// when it exits (whatever the exit code: the process is gone either way).
class PidFile {
 public:
  explicit PidFile(std::string path) : path_(std::move(path)) {}
  void write() {
    if (path_.empty()) return;
    std::ofstream(path_) << getpid() << "\n";
    written_ = true;
  }
  int run_daemon(const fs::DaemonOptions& d) {
    int rc = fs::run_daemon(d);
    if (written_) ::unlink(path_.c_str());
    return rc;
  }

 private:
  std::string path_;
  bool written_ = false;
};

// In the foreground, under systemd Type=notify when $NOTIFY_SOCKET is set.
int serve_in_foreground(fs::DaemonOptions& d, PidFile& pid) {
  d.on_ready = [&](const Status& s) {
    if (!s) {
      std::fprintf(stderr, "peregrine mount: %s\n", s.message().c_str());
      sd_notifyf(0, "STATUS=failed: %s", s.message().c_str());
      return;
    }
    pid.write();
    sd_notifyf(0, "READY=1\nSTATUS=serving %s", d.mountpoint.c_str());
  };
  d.on_stopping = [&] {
    mark_exiting(d);
    sd_notifyf(0, "STOPPING=1\nSTATUS=unmounting %s: draining, checkpointing, flushing", d.mountpoint.c_str());
  };
  return pid.run_daemon(d);
}

// The parent of a background daemon: its exit code is what the child
// reports through the pipe ("OK" once serving, else the error).
int await_child_report(int report_fd, pid_t child) {
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(report_fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) msg.append(buf, static_cast<size_t>(n));
  }
  ::close(report_fd);
  if (msg == "OK") return 0;
  if (msg.empty()) msg = "the daemon exited during startup";
  std::fprintf(stderr, "peregrine mount: %s\n", msg.c_str());
  int status = 0;
  ::waitpid(child, &status, 0);
  return 1;
}

// The child: a session of its own, reports through `report_fd` once it
// serves or has failed, then lets go of the terminal.
[[noreturn]] void serve_as_child(fs::DaemonOptions& d, PidFile& pid, int report_fd) {
  ::setsid();
  if (::chdir("/") != 0) {
    // Paths are absolute already; staying put only keeps a directory busy.
  }
  d.on_stopping = [&] { mark_exiting(d); };
  d.on_ready = [&](const Status& s) {
    std::string msg = s ? "OK" : s.message();
    if (s) pid.write();
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
  std::_Exit(pid.run_daemon(d));
}

// Daemon: the child reports "OK" or the error through a pipe.
int serve_in_background(fs::DaemonOptions& d, PidFile& pid) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return report_and_exit(Status::error(errno, "pipe failed"));
  pid_t child = ::fork();
  if (child < 0) return report_and_exit(Status::error(errno, "fork failed"));
  if (child > 0) {
    ::close(pipefd[1]);
    return await_child_report(pipefd[0], child);
  }
  ::close(pipefd[0]);
  serve_as_child(d, pid, pipefd[1]);
}

}  // namespace

int cmd_mount(int argc, char** argv) {
  MountArgs a;
  if (auto rc = parse_mount_args(argc, argv, &a)) return *rc;
  auto request = parse_mount_request(a.option_strings);
  if (!request) return report_and_exit(request.status());
  // Configuration: file (if any; config_path.h says which), then -o on top.
  auto cfg = config::load_chosen(config::choose_config(a.config_path.empty() ? request->config_file : a.config_path));
  if (!cfg) return report_and_exit(cfg.status());

  fs::DaemonOptions d;
  d.foreground = a.foreground;
  if (auto rc = choose_volume(a.positional, *cfg, *request, d)) return *rc;
  if (Status s = finish_daemon_options(a, *request, d); !s) return report_and_exit(s);

  PidFile pid(a.pid_file);
  return a.foreground ? serve_in_foreground(d, pid) : serve_in_background(d, pid);
}

}  // namespace peregrine::cli
