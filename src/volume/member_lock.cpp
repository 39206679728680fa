#include "peregrine/volume/member_lock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "lock_holder.h"

namespace peregrine {
namespace {

struct flock exiting_mark(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(kExitingMarkOffset);
  fl.l_len = 1;
  return fl;
}

// Tries the flock once: 1 taken, 0 held by someone else, or -errno.
int try_flock(int fd, LockMode mode) {
  int op = (mode == LockMode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    return errno == EWOULDBLOCK ? 0 : -errno;
  }
  return 1;
}

// Waits until process `pid` has exited or `deadline` passed. A pid that no
// longer exists has exited.
void wait_for_exit(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return;  // ESRCH: gone already
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    struct pollfd p = {pidfd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (n != 0 && !(n < 0 && errno == EINTR)) break;  // exited (or poll failed: look again)
  }
  ::close(pidfd);
}

std::string describe(const MemberHolder& h) { return "peregrine daemon (pid " + std::to_string(h.pid) + ")"; }

}  // namespace

pid_t exiting_holder(int fd) {
  struct flock fl = exiting_mark(F_WRLCK);
  if (::fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return 0;
  return fl.l_pid;
}

namespace {

// Waiting for a peregrine daemon that is finishing its unmount to let go
// of a member: its flock, or a block device's O_EXCL claim.
class ExitingDaemonWait {
 public:
  ExitingDaemonWait(const std::string& path, const LockWait& wait)
      : path_(path), wait_(wait), deadline_(std::chrono::steady_clock::now() + wait.limit) {}

  // An exiting daemon waited for, once one was seen (0: none yet).
  pid_t seen() const { return exiting_; }
  // What is left of the wait's limit.
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }

  // The member is held by `holder`, a daemon marked exiting (0: the
  // daemon seen before has gone, but the kernel still holds its lock or
  // claim for a moment: rings of a killed process are torn down
  // asynchronously). Waits for it, or says why it may not.
  Status wait_for(pid_t holder) {
    if (holder != 0) exiting_ = holder;
    const std::string who = "peregrine daemon (pid " + std::to_string(exiting_) + ")";
    if (wait_.limit.count() <= 0)
      return Status::error(EBUSY, "member " + path_ + ": in use by a " + who + " that is exiting");
    if (std::chrono::steady_clock::now() >= deadline_)
      return Status::error(EBUSY, "member " + path_ + ": still in use by a " + who +
                                      " that began exiting; gave up after " +
                                      std::to_string(wait_.limit.count() / 1000) + " s");
    // Said only once the wait has lasted: an unmount normally finishes in
    // milliseconds, and `umount; mount` should print what it does on ext4
    // (xfstests generic/604 races the two).
    const auto now = std::chrono::steady_clock::now();
    if (!exiting_since_) exiting_since_ = now;
    if (!told_ && now - *exiting_since_ >= kQuietWait) {
      told_ = true;
      tell("member " + path_ + ": held by a " + who + " that is finishing its unmount; waiting for it to exit (up to " +
           std::to_string(wait_.limit.count() / 1000) + " s)");
    }
    if (holder != 0)
      wait_for_exit(holder, told_ ? deadline_ : std::min(deadline_, *exiting_since_ + kQuietWait));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Status::ok();
  }

  // The member is held by `h`, a daemon whose mount is gone from the mount
  // table but which has not begun to exit: a plain `umount` returns as soon
  // as the kernel lets go, before the daemon notices (at once, normally; a
  // stopped daemon, only once it runs again). Waits a moment for it to
  // exit or mark itself exiting, and says so once the wait has lasted.
  Status wait_for_unmounted(const MemberHolder& h) {
    if (!h.mountpoint.empty()) unmounted_at_ = h.mountpoint;
    const std::string who = describe(h) + ", whose mount at " + unmounted_at_ + " is gone,";
    if (wait_.limit.count() <= 0)
      return Status::error(EBUSY, "member " + path_ + ": in use by a " + who + " which has not exited yet");
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline_)
      return Status::error(EBUSY, "member " + path_ + ": still in use by a " + who +
                                      " which did not exit; gave up after " +
                                      std::to_string(wait_.limit.count() / 1000) +
                                      " s (is it stopped? see 'ps -o stat " + std::to_string(h.pid) + "')");
    if (!unmounted_since_) unmounted_since_ = now;
    unmounted_ = h.pid;
    if (!told_unmounted_ && now - *unmounted_since_ >= kQuietWait) {
      told_unmounted_ = true;
      tell("member " + path_ + ": held by a " + who + " which has not exited yet; waiting for it (up to " +
           std::to_string(wait_.limit.count() / 1000) + " s)");
    }
    if (h.fuse_daemon)
      wait_for_exit(h.pid, std::min(deadline_, now + kLookAgain));
    else  // it has exited; the kernel lets go of its lock a moment later
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Status::ok();
  }
  // The daemon wait_for_unmounted() waited for (0: none).
  pid_t unmounted() const { return unmounted_; }

 private:
  // How long a daemon whose mount is gone, or that is finishing its
  // unmount, gets before the wait is told (it normally is done within
  // milliseconds), and how often its lock is
  // looked at meanwhile (it may let go, or mark itself exiting, without
  // exiting yet).
  static constexpr std::chrono::milliseconds kQuietWait{1000};
  static constexpr std::chrono::milliseconds kLookAgain{20};

  void tell(const std::string& msg) const {
    if (wait_.on_wait)
      wait_.on_wait(msg);
    else
      std::fprintf(stderr, "peregrine: %s\n", msg.c_str());
  }

  const std::string& path_;
  const LockWait& wait_;
  const std::chrono::steady_clock::time_point deadline_;
  pid_t exiting_ = 0;
  std::optional<std::chrono::steady_clock::time_point> exiting_since_;
  bool told_ = false;
  std::optional<std::chrono::steady_clock::time_point> unmounted_since_;
  pid_t unmounted_ = 0;
  std::string unmounted_at_;
  bool told_unmounted_ = false;
};

// The exiting daemon that holds a block device's claim, or 0: looked up
// through a descriptor opened without O_EXCL, which the claim allows.
pid_t exiting_claimant(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  pid_t holder = exiting_holder(fd);
  ::close(fd);  // this process holds no POSIX lock on the member to lose
  return holder;
}

// The member (`look`: a descriptor of it) is held by a process that has
// not marked it exiting: a daemon whose mount is gone is waited for a
// moment (ok: look again); one whose mount is still there is refused at
// once saying where, any other holder with `refusal`, or, when that is ok,
// "in use by another peregrine process".
Status not_exiting_holder(const MemberFile& look, ExitingDaemonWait& waiter, const Status& refusal) {
  const std::string& path = look.info().path;
  MemberHolder h = find_member_holder(look);
  // The daemon waited for before has exited without marking the member
  // (or the mark went unseen between two looks), and the kernel still
  // holds its lock for a moment: io_uring rings are torn down
  // asynchronously after the process is gone.
  const bool left_over = h.pid != 0 && h.pid == waiter.unmounted() && !h.fuse_daemon;
  if (h.mount_gone() || left_over) return waiter.wait_for_unmounted(h);
  if (h.still_mounted)
    return Status::error(EBUSY, "member " + path + ": in use: its volume is mounted at " + h.mountpoint + " (" +
                                    describe(h) + "); unmount it first");
  if (!refusal) return refusal;
  return Status::error(EBUSY, "member " + path + ": in use by another peregrine process" +
                                  (h.pid != 0 ? " (pid " + std::to_string(h.pid) + ")" : std::string()));
}

}  // namespace

Status lock_member(const MemberFile& member, LockMode mode, const LockWait& wait) {
  const std::string& path = member.info().path;
  ExitingDaemonWait waiter(path, wait);
  while (true) {
    int rc = try_flock(member.fd(), mode);
    if (rc == 1) return Status::ok();
    if (rc < 0) return Status::error(-rc, "member " + path + ": cannot lock: " + std::strerror(-rc));
    pid_t holder = exiting_holder(member.fd());
    if (holder == 0) {
      // A daemon drops its flock before its mark: look once more, so one
      // that let go between the two looks is not taken for a live holder.
      rc = try_flock(member.fd(), mode);
      if (rc == 1) return Status::ok();
      if (rc < 0) return Status::error(-rc, "member " + path + ": cannot lock: " + std::strerror(-rc));
      if (waiter.seen() == 0) {
        if (Status s = not_exiting_holder(member, waiter, Status::ok()); !s) return s;
        continue;
      }
    }
    if (Status s = waiter.wait_for(holder); !s) return s;
  }
}

Expected<MemberFile> open_member_locked(const std::string& path, MemberFile::Mode mode, const LockWait& wait) {
  ExitingDaemonWait waiter(path, wait);
  while (true) {
    auto file = MemberFile::open(path, mode);
    if (file) {
      // The flock gets what is left of the limit, not a second one.
      LockWait rest = wait;
      if (waiter.seen() != 0) rest.limit = waiter.remaining();
      if (Status s = lock_member(*file, lock_mode_for(mode), rest); !s) return s;
      return file;
    }
    // EBUSY: a block device claimed by another holder. A daemon that is
    // finishing its unmount keeps its claim until it exits: `umount` and
    // then fsck or mount must wait for it, as for a file member's flock.
    if (file.status().errnum() != EBUSY) return file.status();
    pid_t holder = exiting_claimant(path);
    if (holder == 0 && waiter.seen() == 0) {
      // Claimed by a daemon that has not marked it: looked at through a
      // descriptor without O_EXCL, which the claim allows.
      auto look = MemberFile::open(path, MemberFile::Mode::inspect);
      if (!look) return file.status();
      if (Status s = not_exiting_holder(*look, waiter, file.status()); !s) return s;
      continue;
    }
    if (Status s = waiter.wait_for(holder); !s) return s;
  }
}

Status lock_members(std::span<const MemberFile> members, LockMode mode, const LockWait& wait) {
  for (const MemberFile& m : members)
    if (Status s = lock_member(m, mode, wait); !s) return s;
  return Status::ok();
}

Status mark_members_exiting(const std::vector<std::string>& paths) {
  Status first = Status::ok();
  for (const std::string& path : paths) {
    // Deliberately left open: closing it would drop the mark (and any other
    // POSIX lock of this process on the member) before the daemon is done.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct flock fl = exiting_mark(F_RDLCK);
    if (fd < 0 || ::fcntl(fd, F_SETLK, &fl) != 0) {
      int e = errno;
      if (fd >= 0) ::close(fd);
      if (first) first = Status::error(e, "member " + path + ": cannot mark it exiting: " + std::strerror(e));
    }
  }
  return first;
}

}  // namespace peregrine
