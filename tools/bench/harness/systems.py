"""The systems a case compares, each set up fresh and torn down by the Session.

Every function returns a Target (fio.py) once the system serves, and has
registered its teardown with the Session first, so an interrupt between
the two still unmounts. Members live in a media directory: /dev/shm
(tmpfs: no device latency, only CPU), a directory on the machine's disk
(real latency, O_DIRECT through to it), or tmpfs behind a shape (a
latency/queue-depth/IOPS/bandwidth model; see shape_fs for the peers).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

from .fio import Target
from .session import unmount, wait_exit


class Binaries:
    def __init__(self, root, build_dir=None):
        b = build_dir or os.path.join(root, "build", "release")
        self.peregrine = os.path.join(b, "tools/peregrine/peregrine")
        self.null_fuse = os.path.join(b, "tools/bench/fuse/peregrine-null-fuse")
        self.shape_fs = os.path.join(b, "tools/bench/fuse/peregrine-shape-fs")
        self.shaped_ceiling = os.path.join(b, "tools/bench/fuse/peregrine-shaped-ceiling")
        self.graph = os.path.join(b, "graph/peregrine-graph")
        self.graph_bench = os.path.join(root, "tools/bench/graph/run-graph-bench")


def fill(path, size_mib, direct=True):
    """Writes real data, so reads measure the medium and not a hole."""
    flags = ["oflag=direct"] if direct else []
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={size_mib}",
                    "status=none", "conv=fsync"] + flags, check=True)


def _pgrep(pattern):
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def _reap(pids, what, timeout=60):
    """Waits for a peer daemon to exit after its unmount. One that does not
    (a mergerfs 2.41.1 was seen to stay, its threads in futex waits, after
    fusermount -u) gets SIGTERM, then SIGKILL: no process outlives the run."""
    for p in pids:
        if wait_exit(p, timeout):
            continue
        print(f"bench: {what} (pid {p}) did not exit {timeout} s after its unmount; terminating it",
              file=sys.stderr)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                break
            if wait_exit(p, 10):
                break


def raw_members(session, media, n, size_mib, label="ideal", per_file_jobs=True):
    d = session.workdir(media, "raw")
    files = []
    for i in range(n):
        f = os.path.join(d, f"member{i}")
        fill(f, size_mib, direct=not media.startswith("/dev/shm"))
        files.append(f)
    return (Target(label=label, files=files, per_file_jobs=per_file_jobs, file_size=f"{size_mib}M"),
            lambda: session.remove(d))


def null_fuse(session, bins, media, transport, size_mib):
    d = session.workdir(media, "null")
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    token = session.on_close(f"null FUSE at {mnt}", lambda: unmount(mnt))
    subprocess.run([bins.null_fuse, "--workers", "2", "--transport", transport,
                    "--size", str(size_mib << 20), mnt], check=True)
    pids = _pgrep(f"peregrine-null-fuse .*{mnt}")

    def teardown():
        session.undo_now(token)
        for p in pids:
            wait_exit(p)
        session.remove(d)
    return Target(label=f"null-{transport}", files=[os.path.join(mnt, "data")], pids=pids,
                  file_size=f"{size_mib}M"), teardown


class Volume:
    """A mounted peregrine volume (the daemon under test)."""

    def __init__(self, session, bins, media, members, transport="auto", options=(), shape=None,
                 stripe_unit=None, member_mib=1280, file_mib=1024, fill_file=True, label=None):
        self.bins = bins
        self.session = session
        d = self.dir = session.workdir(media, "vol")
        self.mnt = os.path.join(d, "mnt")
        os.mkdir(self.mnt)
        self.members = [os.path.join(d, f"m{i}") for i in range(members)]
        mkfs = [bins.peregrine, "mkfs", "--force", "--size", f"{member_mib}M"]
        if stripe_unit:
            mkfs += ["--stripe-unit", stripe_unit]
        subprocess.run(mkfs + self.members, check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ)
        env.pop("PEREGRINE_BENCH_SHAPE", None)
        if shape:
            env["PEREGRINE_BENCH_SHAPE"] = shape.env()
        opts = [f"fuse.transport={transport}", *options]
        pid_file = os.path.join(d, "pid")
        self._token = session.on_close(f"peregrine at {self.mnt}", self._unmount)
        self.pid = None
        subprocess.run([bins.peregrine, "mount", "--pid-file", pid_file, "-o", ",".join(opts),
                        *self.members, self.mnt], check=True, env=env)
        with open(pid_file) as f:
            self.pid = int(f.read())
        self.file = os.path.join(self.mnt, "f")
        if fill_file:
            fill(self.file, file_mib)
        self.target = Target(label=label or f"peregrine-{transport}", files=[self.file], pids=[self.pid],
                             file_size=f"{file_mib}M", stats=self.stats)

    def stats(self):
        """The daemon's raw statistics (with whole latency histograms), as
        `peregrine stats` reads them: the mount root's stats xattr."""
        return json.loads(os.getxattr(self.mnt, "user.peregrine.stats"))

    def _unmount(self):
        unmount(self.mnt)
        if self.pid:
            wait_exit(self.pid)

    def teardown(self):
        self.session.undo_now(self._token)
        self.session.remove(self.dir)


def mergerfs(session, media, branches, setting, file_mib, branch_dirs=None, binary="mergerfs"):
    """mergerfs over `branches` directories. setting: the -o string;
    binary: Debian's mergerfs, or a build given with --peer-mergerfs."""
    d = session.workdir(media, "merger")
    dirs = branch_dirs or []
    if not dirs:
        for i in range(branches):
            b = os.path.join(d, f"b{i}")
            os.mkdir(b)
            dirs.append(b)
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    pids = []  # filled once it serves; the undo action reaps them, also after a Ctrl-C
    token = session.on_close(f"mergerfs at {mnt}", lambda: (unmount(mnt), _reap(pids, f"mergerfs at {mnt}")))
    subprocess.run([binary, "-o", setting, ":".join(dirs), mnt], check=True)
    pids += _pgrep(f"{re.escape(os.path.basename(binary))} .*{mnt}")
    f = os.path.join(mnt, "f")
    fill(f, file_mib, direct=False)  # mergerfs refuses some O_DIRECT writes on disk files

    def teardown():
        session.undo_now(token)
        session.remove(d)
    return Target(label="mergerfs", files=[f], pids=pids, file_size=f"{file_mib}M"), teardown


def passthrough_hp(session, binary, media, file_mib, uring, source_dir=None, label="ph"):
    """libfuse's example/passthrough_hp (--peer-passthrough-hp) over one
    source directory: a directory on the medium, or source_dir (a shaped
    drive). --nopassthrough: the daemon serves every read and write itself
    (kernel passthrough would measure the kernel, not a FUSE daemon); with
    `uring`, over FUSE-over-io_uring (-o io_uring, needs the fuse module's
    enable_uring). It daemonizes once mounted."""
    d = session.workdir(media, "ph")
    src = source_dir
    if not src:
        src = os.path.join(d, "src")
        os.mkdir(src)
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    pids = []
    token = session.on_close(f"passthrough_hp at {mnt}",
                             lambda: (unmount(mnt), _reap(pids, f"passthrough_hp at {mnt}")))
    cmd = [binary, "--nopassthrough"] + (["-o", "io_uring"] if uring else []) + [src, mnt]
    subprocess.run(cmd, check=True)
    pids += _pgrep(f"{re.escape(os.path.basename(binary))} .*{mnt}")
    f = os.path.join(mnt, "f")
    fill(f, file_mib, direct=False)

    def teardown():
        session.undo_now(token)
        session.remove(d)
    return Target(label=label, files=[f], pids=pids, file_size=f"{file_mib}M"), teardown


def have(program):
    return shutil.which(program) is not None
