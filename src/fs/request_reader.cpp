#include "peregrine/fs/request_reader.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

bool is_data_request(const void* buf, ssize_t n) {
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return false;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof h);
  return h.opcode == FUSE_READ || h.opcode == FUSE_WRITE;
}

// Requests whose handling may wait for long (a journal commit, another
// process's lock, the device): their worker lets go of the read turn first.
// Any other request keeps it; a wait they meet on the way (an IO gate,
// synchronous IO) lets go of it there.
bool may_wait_long(const void* buf, ssize_t n) {
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return true;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof h);
  switch (h.opcode) {
    case FUSE_FSYNC:
    case FUSE_FSYNCDIR:
    case FUSE_SETLK:
    case FUSE_SETLKW:
    case FUSE_IOCTL:
    case FUSE_POLL:
    case FUSE_INIT:
    case FUSE_DESTROY: return true;
    default: return false;
  }
}

// The thread that made the request (0 for one the kernel sends without
// credentials).
uint32_t caller_in_request(const void* buf, ssize_t n) {
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return 0;
  fuse_in_header h;
  std::memcpy(&h, buf, sizeof h);
  return h.pid;
}

// Whether a request waits on the descriptor, without taking it.
bool request_waiting(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

// A read() that slept and was woken takes longer than this here (a wake-up
// costs 10 us or more on the machines measured); one that found a request
// waiting returns well within it. Misjudging costs one poll(), or a lone
// request taken for a queued one (request_was_queued).
constexpr uint64_t kFasterThanASleepNs = 5000;

// A lone program's run counts only while a worker looks for its requests
// (a single reader asleep in read() would be woken for each, wherever it
// slept); whether one program is alone is asked only then, the clock too.
bool may_follow_lone_program(const LoneCaller* lone, const ReadSpin* spin) {
  return lone != nullptr && spin != nullptr && spin->window_ns() != 0;
}

// A read that must not end the thread: libfuse cancels workers blocked in
// read() at exit, and staged IO must not be left to a thread-exit handler.
ssize_t read_uncancellable(int fd, void* buf, size_t len) {
  int old = 0;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  ssize_t n = ::read(fd, buf, len);
  int err = errno;
  pthread_setcancelstate(old, nullptr);
  errno = err;
  return n;
}

}  // namespace

bool RequestReader::set_nonblocking(int fd, bool on) {
  if (fd_ != fd) {
    flags_ = fcntl(fd, F_GETFL);
    if (flags_ < 0) return false;
    fd_ = fd;
  }
  if (((flags_ & O_NONBLOCK) != 0) == on) return true;
  int flags = on ? flags_ | O_NONBLOCK : flags_ & ~O_NONBLOCK;
  if (fcntl(fd, F_SETFL, flags) != 0) {
    fd_ = -1;  // unknown now
    return false;
  }
  flags_ = flags;
  return true;
}

ssize_t RequestReader::read(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data, ReadTurn* turn,
                            ReadSpin* spin, LoneCaller* lone) {
  if (lone != nullptr && !lone->enabled()) lone = nullptr;
  noted_ = false;
  const ssize_t n = read_one(fd, buf, len, staging, is_data, turn, spin, lone);
  // The clock after the read, which may have slept for long.
  if (n > 0 && lone != nullptr && !noted_) lone->note_request(buf, static_cast<size_t>(n), monotonic_ns());
  return n;
}

ssize_t RequestReader::read_one(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data, ReadTurn* turn,
                                ReadSpin* spin, LoneCaller* lone) {
  *is_data = false;
  queued_ = false;
  // Only the turn's holder follows a lone program; one that lost the turn
  // (an fsync let go of it) comes back to its own CPUs first.
  if (follow_.holding() && (turn == nullptr || !turn->held_here())) follow_.release();
  if (turn == nullptr) return read_in_turn(fd, buf, len, staging, is_data, spin);
  // One program alone: one worker reads (its look takes each request).
  if (may_follow_lone_program(lone, spin) && lone->alone(monotonic_ns())) turn->note_lone_program();
  for (;;) {
    // IO staged, or on the drives: requests are being answered by the drive
    // threads rather than by the workers that read them.
    const bool busy = staging.staged();
    const bool io_going = busy || staging.io_in_flight();
    if (io_going) turn->note_busy();
    if (!turn->busy()) {
      // Every worker reads. One that took the turn just as the volume went
      // quiet lets go of it: a holder that no longer reads through the turn
      // would never hand it on.
      turn->leave();
      return read_in_turn(fd, buf, len, staging, is_data, spin);
    }
    if (turn->try_take()) {
      // Requests may be queueing faster than one worker takes them when
      // the volume is busy (IO staged across requests) or when this one was
      // already waiting (the read returned sooner than a sleep could): only
      // then check for another, a system call a quiet volume should not pay
      // per request.
      const uint64_t asked = monotonic_ns();
      ssize_t n = read_in_turn(fd, buf, len, staging, is_data, spin);
      const uint64_t read_at = monotonic_ns();
      const bool was_waiting = read_at - asked < kFasterThanASleepNs;
      // Told before it is asked: this request may be what ends the lone
      // program's run (a write, another caller).
      if (n > 0 && lone != nullptr) {
        lone->note_request(buf, static_cast<size_t>(n), read_at);
        noted_ = true;
      }
      const bool alone = may_follow_lone_program(lone, spin) && lone->alone(read_at);
      // A request that may wait long is served without the turn, and so
      // without following.
      const bool keeps_turn = n > 0 && !may_wait_long(buf, n);
      if (keeps_turn && alone) {
        const bool was_holding = follow_.holding();
        follow_.follow(caller_in_request(buf, n), read_at, *lone);
        // A waiting worker, asleep with no timeout, starts looking out.
        if (!was_holding && follow_.holding()) turn->nudge();
      } else {
        follow_.release();
      }
      // The run ended: every worker reads again, before this request's
      // work (which may poll for its IO) holds the turn.
      if (n > 0 && !alone && !io_going && turn->free_if_only_lone()) return n;
      // A lone program's volume stays busy: its requests keep one reader.
      if (n > 0 && turn->note_holder_read(!alone && !io_going && !was_waiting))
        return n;  // quiet: the turn is let go of
      if (keeps_turn) {
        // A lone program's next request, sent before this one was read (a
        // close's RELEASE, then the next open), is no work for a helper on
        // another CPU, whose reply would move the program there.
        if (busy || (was_waiting && !alone)) turn->call_help(fd);
      } else {
        turn->leave();  // or the channel ended, or an error
      }
      return n;
    }
    ssize_t n = read_waiting(fd, buf, len, staging, is_data);
    if (n >= 0 || errno != EAGAIN) return n;
    // While the one reader follows a lone program, one waiting worker looks
    // out for it stalled (lone_caller_follow.h): then it puts the reader
    // back and takes the waiting request at the next turn of this loop.
    // A look that finds no stall waits again, taking nothing.
    // A follower found idle (its program ended) is put back too, taking
    // nothing, and the look-out then sleeps without a timeout.
    ReadTurn::Woken woken;
    for (;;) {
      const bool guard = lone != nullptr && lone->following() && lone->try_guard();
      woken = turn->wait(guard ? static_cast<int>(LoneCaller::kStalledNs / 1'000'000) : -1);
      uint32_t put_back = 0;
      bool stalled = false;
      if (guard && woken == ReadTurn::Woken::timed_out) {
        // Looked at while the guard is held: one look-out's looks alone
        // make the two that judge a stall.
        const bool waiting = request_waiting(fd);
        if (lone->follower_stalled(waiting)) {
          put_back = lone->stop_stalled_follower(monotonic_ns());
          stalled = true;
        } else if (!waiting) {
          put_back = lone->stop_idle_follower(monotonic_ns());
        }
      }
      if (guard) lone->end_guard();
      if (put_back != 0) lone->put_back(LoneCallerFollow::restore_thread(put_back));
      if (woken != ReadTurn::Woken::timed_out || stalled) break;
    }
    if (woken == ReadTurn::Woken::by_signal) {
      errno = EINTR;  // libfuse checks for exit, then calls again
      return -1;
    }
  }
}

ssize_t RequestReader::read_waiting(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data) {
  ssize_t n = -1;
  int err = EAGAIN;
  if (set_nonblocking(fd, true)) {
    n = read_uncancellable(fd, buf, len);
    err = errno;
  }
  if (n >= 0) {
    queued_ = true;
    *is_data = is_data_request(buf, n);
    if (!*is_data) staging.unplug();
    return n;
  }
  staging.unplug();  // about to wait, or an error
  errno = err;
  return -1;
}

ssize_t RequestReader::read_in_turn(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data,
                                    ReadSpin* spin) {
  bool staged = staging.staged();
  if (staged && !set_nonblocking(fd, true)) {
    staging.unplug();  // cannot peek without blocking: hand on now
    staged = false;
  }
  ssize_t n = -1;
  if (staged) {
    n = read_uncancellable(fd, buf, len);
    queued_ = n >= 0;
    if (n < 0) {
      const int err = errno;
      staging.unplug();  // no further request waiting, or an error: hand on
      if (err != EAGAIN) {
        errno = err;
        return -1;
      }
    }
  }
  if (n < 0) {
    // A worker that found the staged batch's end polls on the descriptor
    // as it is; one that came with nothing staged reads blocking.
    n = read_next(fd, buf, len, spin, !staged);
    if (n < 0) return -1;
  }
  *is_data = is_data_request(buf, n);
  if (!*is_data) staging.unplug();
  return n;
}

ssize_t RequestReader::read_next(int fd, void* buf, size_t len, ReadSpin* spin, bool blocking) {
  // A reader that follows a lone program sleeps on that program's CPU,
  // where a look would keep the program from running.
  const bool spinner = spin != nullptr && !follow_.holding() && spin->try_begin();
  const uint64_t began = spinner ? monotonic_ns() : 0;
  const uint64_t window = spinner ? spin->window_ns() : 0;
  if (window == 0) {
    // A quiet worker makes one read() per request, as libfuse's own loop
    // does; a busy one keeps the descriptor non-blocking for its next
    // batch rather than pay two fcntl() calls. If the mode cannot be set,
    // the sleep polls first.
    if (blocking) set_nonblocking(fd, false);
  } else if (set_nonblocking(fd, true)) {
    // Holding the spinner's place: not a moment to be cancelled at. The
    // yield lets the caller the last reply woke, or a drive thread, run at
    // once if it shares this CPU.
    int old = 0;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    ssize_t n;
    bool first_look = true;
    for (;;) {
      n = ::read(fd, buf, len);
      if (n >= 0 || errno != EAGAIN || monotonic_ns() - began >= window) break;
      first_look = false;
      sched_yield();
    }
    const int err = errno;
    pthread_setcancelstate(old, nullptr);
    if (n >= 0) {
      queued_ = first_look;
      spin->found();
      return n;
    }
    if (err != EAGAIN) {
      spin->missed();
      errno = err;
      return -1;
    }
  }
  if (!spinner) {
    // Another worker spins, or none may: a read that returns sooner than a
    // sleep could found its request queued.
    const uint64_t asked = monotonic_ns();
    const ssize_t n = sleep_for_request(fd, buf, len);
    queued_ = n >= 0 && monotonic_ns() - asked < kFasterThanASleepNs;
    return n;
  }
  spin->missed();
  ssize_t n = sleep_for_request(fd, buf, len);
  if (n >= 0) {
    const uint64_t waited = monotonic_ns() - began;
    spin->adapt(waited);
    // With no window no look came first: judged as another worker's read
    // is. After a spin that missed, the request came later.
    queued_ = window == 0 && waited < kFasterThanASleepNs;
  }
  return n;
}

ssize_t RequestReader::sleep_for_request(int fd, void* buf, size_t len) {
  // A descriptor whose mode is not known is read first: blocking, that is
  // the sleep; non-blocking, it says EAGAIN.
  bool poll_first = fd_ == fd && (flags_ & O_NONBLOCK) != 0;
  for (;;) {
    if (poll_first) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, -1) < 0) return -1;  // EINTR: libfuse checks for exit, then calls again
    }
    ssize_t n = ::read(fd, buf, len);
    if (n >= 0 || errno != EAGAIN) return n;
    poll_first = true;  // another worker took it, or the descriptor was non-blocking after all
  }
}

}  // namespace peregrine::fs
