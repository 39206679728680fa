"""Session: the run's work directories, its undo stack and its progress.

Everything the harness creates (directories, mounts, daemons, the FUSE
module parameter it changes) is registered here as an undo action the
moment it exists; close() runs them newest first. SIGINT and SIGTERM
become KeyboardInterrupt in the main thread, so a Ctrl-C anywhere unwinds
through close() and leaves the machine as it was.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

URING_PARAM = "/sys/module/fuse/parameters/enable_uring"


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


class Session:
    def __init__(self):
        self._undo = []  # (description, callable), run newest first
        self._dirs = {}  # workdir -> its undo token
        self.progress = Progress()
        signal.signal(signal.SIGINT, _interrupt)
        signal.signal(signal.SIGTERM, _interrupt)

    # --- undo stack -------------------------------------------------------
    def on_close(self, what, action):
        self._undo.append((what, action))
        return len(self._undo) - 1

    def undo_now(self, token):
        """Runs one registered action early (a system torn down between rounds).
        It stays registered until it has finished: a Ctrl-C in the middle of
        it (a directory half removed) leaves it for close() to run again, as
        every action may be run twice."""
        what, action = self._undo[token]
        if action is not None:
            action()
        self._undo[token] = (what, None)

    def close(self):
        # A second Ctrl-C during cleanup must not leave half of it undone.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while self._undo:
            what, action = self._undo.pop()
            if action is None:
                continue
            try:
                action()
            except Exception as e:  # keep undoing the rest
                print(f"bench: cleanup of {what} failed: {e}", file=sys.stderr)

    # --- resources --------------------------------------------------------
    def workdir(self, parent, tag):
        """A fresh directory under parent, removed at close."""
        os.makedirs(parent, exist_ok=True)
        # Made and registered with Ctrl-C held off, so that no directory
        # exists that close() does not know of.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            path = tempfile.mkdtemp(prefix=f"peregrine-bench-{tag}-", dir=parent)
            self._dirs[path] = self.on_close(f"directory {path}", lambda: shutil.rmtree(path, ignore_errors=True))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return path

    def remove(self, path):
        """Removes a workdir now (members of a system torn down mid-run),
        so tmpfs does not fill up round after round."""
        self.undo_now(self._dirs.pop(path))

    def fuse_uring(self, wanted):
        """Sets the fuse module's enable_uring; the value found is restored at close.
        Returns False when the kernel has no FUSE over io_uring."""
        try:
            with open(URING_PARAM) as f:
                before = f.read().strip()
        except OSError:
            return False
        value = "1" if wanted else "0"
        if (before == "Y") == wanted:
            return True
        try:
            with open(URING_PARAM, "w") as f:
                f.write(value)
        except OSError:
            return False
        restore = "1" if before == "Y" else "0"

        def put_back():
            with open(URING_PARAM, "w") as f:
                f.write(restore)
        self.on_close(f"{URING_PARAM}={before}", put_back)
        return True


def unmount(path):
    """Unmounts a FUSE mount; lazily if it is busy, so cleanup never hangs."""
    if not is_mounted(path):
        return
    if subprocess.run(["fusermount3", "-u", path], stderr=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def wait_exit(pid, timeout=120):
    """Waits for an unrelated process to exit (a daemon after its unmount).
    pidfd_open + poll: woken by the exit itself, not by a polling sleep."""
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, OSError):
        return True
    try:
        import select
        p = select.poll()
        p.register(fd, select.POLLIN)
        return bool(p.poll(timeout * 1000))
    finally:
        os.close(fd)


class Progress:
    """One line per step on stderr: which case, how far, time left.
    Time left is the measured pace so far times the steps still to run."""

    def __init__(self):
        self.total = 0
        self.estimate = 0  # steps the selected cases expect, known up front
        self.done = 0
        self.started = time.monotonic()

    def plan(self, steps):
        self.total += steps

    def step(self, text):
        self.done += 1
        elapsed = time.monotonic() - self.started
        left = ""
        total = max(self.total, self.estimate)
        if self.done > 1 and total >= self.done:
            per = elapsed / (self.done - 1)
            left = f", about {_human(per * (total - self.done + 1))} left"
        print(f"[{self.done}/{total}{left}] {text}", file=sys.stderr, flush=True)

    def note(self, text):
        print(f"  {text}", file=sys.stderr, flush=True)


def _human(seconds):
    seconds = int(seconds)
    if seconds < 90:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"
