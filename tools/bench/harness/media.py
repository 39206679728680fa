"""Where members live, and the device shape every compared system sees.

tmpfs: no device latency; the comparison is CPU per request.
disk:  files on the machine's own disk, opened O_DIRECT by every system.
shaped: tmpfs behind a model of an SSD (Shape). peregrine applies it in
       its drive threads (PEREGRINE_BENCH_SHAPE); fio and mergerfs sit on
       peregrine-shape-fs, a FUSE passthrough that applies the same model
       (ShapeModel in src/backend) to every read and write, so "4 drives of
       80 us" means the same thing for all of them.
"""
import os
import subprocess
from dataclasses import dataclass

from .session import unmount, wait_exit


@dataclass(frozen=True)
class Shape:
    latency_us: int = 80
    qd: int = 32
    iops: int = 20000
    mb_s: int = 500

    def env(self):
        return f"{self.latency_us}:{self.qd}:{self.iops}:{self.mb_s}"

    def describe(self):
        return f"{self.latency_us} us, QD {self.qd}, {self.iops} IOPS, {self.mb_s} MB/s"


@dataclass
class Media:
    name: str        # tmpfs | disk | shaped
    dir: str         # where member files are made
    shape: Shape = None

    @property
    def direct_fill(self):
        return not self.dir.startswith("/dev/shm")


def shaped_dirs(session, bins, media, n):
    """n directories, each on its own peregrine-shape-fs mount (one drive
    each), backed by tmpfs. Returns (directories, teardown), or None when
    the shaping layer is not built."""
    if not os.path.exists(bins.shape_fs):
        return None
    base = session.workdir("/dev/shm", "shape")
    dirs, tokens, pids = [], [], []
    s = media.shape
    for i in range(n):
        back = os.path.join(base, f"back{i}")
        mnt = os.path.join(base, f"drive{i}")
        os.mkdir(back)
        os.mkdir(mnt)
        tokens.append(session.on_close(f"shape-fs at {mnt}", lambda m=mnt: unmount(m)))
        subprocess.run([bins.shape_fs, "--latency-us", str(s.latency_us), "--qd", str(s.qd),
                        "--iops", str(s.iops), "--mb-s", str(s.mb_s), back, mnt], check=True)
        out = subprocess.run(["pgrep", "-f", f"peregrine-shape-fs .*{mnt}"], capture_output=True, text=True)
        pids += [int(p) for p in out.stdout.split()]
        dirs.append(mnt)

    def teardown():
        for t in tokens:
            session.undo_now(t)
        for p in pids:
            wait_exit(p)
        session.remove(base)
    return dirs, teardown, pids
