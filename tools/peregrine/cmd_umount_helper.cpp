// `umount.fuse.peregrine`: the helper umount(8) runs (as root) for mounts of
// type fuse.peregrine:
//
//   umount.fuse.peregrine DIR [-flnrv] [-t fuse.peregrine]
//
// The kernel forgets a FUSE mount at once, but its daemon then still
// drains, checkpoints, flushes and holds the members. This helper asks the
// daemon for its pid (the "pid" of the root's user.peregrine.stats
// document), unmounts, and waits (pidfd) until the daemon has exited, so
// that `umount DIR && peregrine fsck ...` finds the members free, as with a
// local filesystem. A dead mount (no daemon to ask) is just unmounted;
// -l (lazy) unmounts and does not wait.
//
// Exit codes follow umount(8): 0 unmounted, 1 bad invocation, 32 failed.
#include <poll.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "stats_document.h"

namespace peregrine::cli {
namespace {

constexpr int kUsageError = 1;
constexpr int kUmountFailed = 32;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: umount.fuse.peregrine DIR [-flnrv] [-t fuse.peregrine]\n"
               "       umount DIR   (umount(8) runs this helper for fuse.peregrine mounts)\n\n"
               "Unmounts the peregrine filesystem at DIR and waits until its daemon has\n"
               "checkpointed, flushed, released the members and exited.\n\n"
               "-l     lazy: detach now, do not wait for the daemon\n"
               "-f     force: abort the FUSE connection (in-flight requests fail)\n"
               "-n, -r accepted and ignored (no mtab is written; no remounting read-only)\n"
               "-v     say what is done\n\n"
               "Exit status: 0 unmounted, 1 bad invocation, 32 unmount failed.\n");
}

int error(int code, const std::string& message) {
  std::fprintf(stderr, "umount.fuse.peregrine: %s\n", message.c_str());
  return code;
}

// The pid of the daemon serving the mount at `dir`, from its statistics
// document; 0 when it does not answer (dead mount) or gives none.
pid_t daemon_pid(const std::string& dir) {
  auto doc = read_stats_document(dir);
  if (!doc || !doc->contains("pid") || !(*doc)["pid"].is_number_integer()) return 0;
  return static_cast<pid_t>((*doc)["pid"].get<int64_t>());
}

}  // namespace

int cmd_umount_helper(int argc, char** argv) {
  std::vector<std::string> positional;
  bool lazy = false, force = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a == "-t") {
      if (i + 1 >= argc) return error(kUsageError, "-t needs a value");
      std::string_view type = argv[++i];
      if (type != "fuse.peregrine" && type != "peregrine")
        return error(kUsageError, "-t " + std::string(type) + ": this helper unmounts type fuse.peregrine only");
      continue;
    }
    if (a == "-N") return error(kUsageError, "-N (mount namespaces) is not supported");
    if (a.size() > 1 && a[0] == '-') {
      for (char c : a.substr(1)) {
        switch (c) {
          case 'l': lazy = true; break;
          case 'f': force = true; break;
          case 'v': verbose = true; break;
          case 'n':
          case 'r': break;
          default:
            usage(stderr);
            return error(kUsageError, std::string("unknown flag -") + c);
        }
      }
      continue;
    }
    positional.emplace_back(a);
  }
  if (positional.size() != 1) {
    usage(stderr);
    return error(kUsageError, "give exactly one mount point");
  }
  const std::string& dir = positional[0];

  // Ask before unmounting: afterwards the daemon cannot be reached. The
  // pidfd pins the process, so the pid cannot be reused while we wait.
  pid_t pid = lazy ? 0 : daemon_pid(dir);
  int pidfd = pid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1;
  if (verbose && !lazy && pidfd < 0)
    std::fprintf(stderr, "umount.fuse.peregrine: %s: no daemon answers; unmounting without waiting\n", dir.c_str());

  int flags = (lazy ? MNT_DETACH : 0) | (force ? MNT_FORCE : 0);
  if (::umount2(dir.c_str(), flags) != 0) {
    int e = errno;
    if (pidfd >= 0) ::close(pidfd);
    return error(kUmountFailed, dir + ": " + (e == EBUSY ? "target is busy" : std::strerror(e)));
  }
  if (pidfd < 0) return 0;
  if (verbose)
    std::fprintf(stderr, "umount.fuse.peregrine: %s unmounted; waiting for the daemon (pid %d) to finish\n",
                 dir.c_str(), static_cast<int>(pid));
  // No time limit: like the unmount of a local filesystem, this returns
  // once everything is on the members (interrupt it to stop waiting; the
  // daemon carries on).
  struct pollfd p = {pidfd, POLLIN, 0};
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
  ::close(pidfd);
  if (verbose) std::fprintf(stderr, "umount.fuse.peregrine: the daemon (pid %d) has exited\n", static_cast<int>(pid));
  return 0;
}

}  // namespace peregrine::cli
