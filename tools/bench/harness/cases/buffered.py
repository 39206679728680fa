"""Buffered IO through the page cache: a sequential write larger than the
dirty share of memory, and cp of a large file into the volume, each timed
to the end of its flush: dd conv=fsync, and `sync FILE` (fsync) after cp.
Not `sync -f` (syncfs): a FUSE filesystem that does not implement it
(mergerfs 2.33) answers at once and leaves the data in the branches' page
cache, which timed mergerfs's cp at memory speed. Members on the machine's
disk, since tmpfs members would double the memory used."""
import os
import subprocess
import time

from .. import systems
from . import common
from .base import Case, cells, fmt, md_table, run_rounds, value


def sizes_mib(ctx):
    if ctx.quick:
        return 512, 256
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:")) // 1024
    with open("/proc/sys/vm/dirty_ratio") as f:
        ratio = int(f.read())
    return int(total * ratio / 100 * 1.5), 4096


def _timed(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, shell=True)
    return time.monotonic() - t0


def configs(ctx):
    write_mib, _ = sizes_mib(ctx)
    # Members big enough for the write, with room to spare.
    member = 320 if ctx.quick else write_mib // 4 + 512
    return common.directories(ctx, ctx.disk_media, ctx.args.transports[-1], member, writeback=True)


def run(ctx):
    write_mib, cp_mib = sizes_mib(ctx)
    src_dir = ctx.session.workdir(ctx.disk_media.dir, "cpsrc")
    src = os.path.join(src_dir, "source")
    systems.fill(src, cp_mib, direct=True)

    def body(cfg, where, r):
        secs = _timed(f"dd if=/dev/zero of={where}/big bs=1M count={write_mib} conv=fsync status=none")
        ctx.record("buffered", cfg.name, "write", r, {"mib_s": write_mib / secs, "seconds": secs})
        os.unlink(f"{where}/big")
        secs = _timed(f"cp {src} {where}/copy && sync {where}/copy")
        ctx.record("buffered", cfg.name, "cp", r, {"mib_s": cp_mib / secs, "seconds": secs})
    run_rounds(ctx, "buffered", configs(ctx), body, f" (write {write_mib} MiB, cp {cp_mib} MiB)", _rounds(ctx))
    ctx.extras["buffered"] = {"write_mib": write_mib, "cp_mib": cp_mib}


def report(ctx):
    c = cells(ctx.records, "buffered")
    if not c:
        return ""
    ex = ctx.extras["buffered"]
    rows = [[cfg, fmt(value(c, cfg, "write", "mib_s")), fmt(value(c, cfg, "cp", "mib_s"))] for cfg in c]
    return (f"Members on {ctx.disk_media.dir}. dd of {ex['write_mib']} MiB (1.5 x the dirty share of "
            f"memory) and cp of a {ex['cp_mib']} MiB file, MiB/s to the end of the flush.\n\n"
            + md_table(["system", "buffered write MiB/s", "cp MiB/s"], rows))


def _rounds(ctx):
    return 1 if ctx.quick else 2


def steps(ctx):
    return _rounds(ctx) * len(configs(ctx))


CASE = Case("buffered", "buffered write and cp", run, report, steps=steps)
