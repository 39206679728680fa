// RequestReader: reads one FUSE request from a worker's /dev/fuse descriptor
// in a way that lets the worker keep the IO of data requests staged across
// requests (docs/design.md section 2.5: unplug when the batch reaches the high
// watermark or the worker has no further request waiting). The daemon
// installs it as libfuse's custom read (fuse_session_custom_io).
//
// The staged IO is handed on (StagedIo::unplug) before the worker can
// sleep: when no request is waiting, on any error, and before returning a
// request that is not a read or a write, whose handling may wait for IO.
// While nothing is staged the descriptor stays blocking, so a worker on a
// quiet volume makes one read() per request, as libfuse's own loop does;
// while something is staged it is non-blocking, so finding no request costs
// one failed read() and never a sleep.
//
// With a ReadTurn shared by the workers, only the worker holding the turn
// sleeps in read(); the others take a request only when one is waiting
// (read_turn.h says why). With a ReadSpin, a worker with nothing staged
// that finds no request first looks again for the spin's window, on the
// descriptor made non-blocking, before it sleeps in poll() (read_spin.h).
// While a LoneCaller says one program thread alone makes metadata requests
// and the spin looks, the volume counts as busy for the turn too (one
// worker reads, and its look takes each request), and the holder calls no
// helper for a request it merely found waiting; when the run ends, every
// worker reads again at once (lone_caller.h says why). Where the LoneCaller
// lets it, the reader also follows the program to its CPU, lowered, and
// does not spin there (lone_caller_follow.h).
//
// Thread rules: one RequestReader per FUSE worker, used by that worker only.
// It remembers the blocking mode it last set on the descriptor it last read
// (each worker has its own cloned descriptor). Never fails with EAGAIN.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "peregrine/fs/lone_caller.h"
#include "peregrine/fs/lone_caller_follow.h"
#include "peregrine/fs/read_spin.h"
#include "peregrine/fs/read_turn.h"

namespace peregrine::fs {

// The calling worker's staged IO.
class StagedIo {
 public:
  virtual bool staged() = 0;
  virtual void unplug() = 0;
  // Whether the volume has IO on its drives, whose replies drive threads
  // send: requests are then not answered by the worker that read them.
  virtual bool io_in_flight() = 0;

 protected:
  ~StagedIo() = default;
};

class RequestReader {
 public:
  // Constructed on a worker's first read: a worker libfuse started from a
  // following one is put back first (lone_caller_follow.h).
  RequestReader() { LoneCallerFollow::undo_inherited(); }

  // Reads one request into buf. Returns its size (0 if the descriptor gave
  // none), or -1 with errno set. *is_data says whether it is a FUSE_READ or
  // FUSE_WRITE, the only requests that return with IO still staged.
  // `turn`: the workers' ReadTurn, or null for every worker to read alike.
  // `spin`: the workers' ReadSpin, or null for none to spin. `lone`: the
  // workers' LoneCaller, told of every request read, or null (it acts
  // through `turn`).
  ssize_t read(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data, ReadTurn* turn = nullptr,
               ReadSpin* spin = nullptr, LoneCaller* lone = nullptr);

  // Whether the request the last read() returned was queued already when
  // the worker asked: other requests keep coming while this worker serves
  // (the volume is busy, even where no IO stays staged or on the drives).
  // True for one a helper, a staged batch's next read or the spin's first
  // look found; false for one found by a later look of the spin or after a
  // spin that missed; a read that may have slept without spinning is
  // judged by its time (queued if it returned within 5 us).
  bool request_was_queued() const { return queued_; }

 private:
  // read() but for telling the LoneCaller.
  ssize_t read_one(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data, ReadTurn* turn, ReadSpin* spin,
                   LoneCaller* lone);
  // As the worker whose turn it is (or the only one): sleeps when nothing
  // is staged and no request waits.
  ssize_t read_in_turn(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data, ReadSpin* spin);
  // With nothing staged: the next request, spinning first if `spin` lets
  // this worker; sleeps until one comes (`blocking`: in a blocking read()
  // when it does not spin). -1 with errno on an error.
  ssize_t read_next(int fd, void* buf, size_t len, ReadSpin* spin, bool blocking);
  // Sleeps until a request comes and reads it: in read() on a blocking
  // descriptor, else in poll().
  ssize_t sleep_for_request(int fd, void* buf, size_t len);
  // As a helper: a request only if one is waiting; else -1 with EAGAIN,
  // with the batch handed on.
  ssize_t read_waiting(int fd, void* buf, size_t len, StagedIo& staging, bool* is_data);
  bool set_nonblocking(int fd, bool on);

  int fd_ = -1;    // the descriptor whose flags are known, -1 if none
  int flags_ = 0;  // its file status flags as last set
  bool queued_ = false;  // request_was_queued()
  bool noted_ = false;   // read_one() told the LoneCaller of its request

  LoneCallerFollow follow_;  // while this worker reads for a lone program
};

}  // namespace peregrine::fs
