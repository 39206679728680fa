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
#include <vector>

#include "commands.h"
#include "mount_helper_args.h"
#include "stats_document.h"

namespace peregrine::cli {
namespace {

constexpr int kUmountFailed = 32;  // umount(8): unmount failure

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

const HelperSyntax kSyntax = {
    .name = "umount.fuse.peregrine",
    .flags = "lfvnr",
    .takes_options = false,
    .namespace_has_value = false,
    .wrong_type = "this helper unmounts type fuse.peregrine only",
    .positional = 1,
    .positional_hint = "give exactly one mount point",
    .usage = usage,
};

int error(int code, const std::string& message) { return helper_error(kSyntax, code, message); }

// The pid of the daemon serving the mount at `dir`, from its statistics
// document; 0 when it does not answer (dead mount) or gives none.
pid_t daemon_pid(const std::string& dir) {
  auto doc = read_stats_document(dir);
  if (!doc || !doc->contains("pid") || !(*doc)["pid"].is_number_integer()) return 0;
  return static_cast<pid_t>((*doc)["pid"].get<int64_t>());
}

}  // namespace

int cmd_umount_helper(int argc, char** argv) {
  HelperArgs given;
  if (auto rc = parse_helper_args(kSyntax, argc, argv, &given)) return *rc;
  const bool lazy = given.has('l'), force = given.has('f'), verbose = given.has('v');
  const std::string& dir = given.positional[0];

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
