"""The metadata path: create, stat, readdir and unlink of many files in one
directory, by one thread, on peregrine, mergerfs and a native directory,
all over tmpfs. Python's own cost per call (about 1 us) is the same for
every system."""
import os
import time

from . import common
from .base import Case, cells, fmt, md_table, ratio, run_rounds, value

PHASES = ("create", "stat", "readdir", "unlink")


def files(ctx):
    return 3000 if ctx.quick else 100000


def _phases(d, n):
    names = [os.path.join(d, f"file-{i:06d}") for i in range(n)]
    out = {}
    t0 = time.monotonic()
    for p in names:
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
    out["create"] = n / (time.monotonic() - t0)
    t0 = time.monotonic()
    for p in names:
        os.stat(p)
    out["stat"] = n / (time.monotonic() - t0)
    t0 = time.monotonic()
    seen = sum(1 for _ in os.scandir(d))
    out["readdir"] = seen / (time.monotonic() - t0)
    if seen != n:
        raise RuntimeError(f"readdir saw {seen} of {n} files in {d}")
    t0 = time.monotonic()
    for p in names:
        os.unlink(p)
    out["unlink"] = n / (time.monotonic() - t0)
    return out


def configs(ctx):
    return common.directories(ctx, ctx.tmpfs_media, ctx.args.transports[-1])


def run(ctx):
    n = files(ctx)

    def body(cfg, where, r):
        d = os.path.join(where, "meta")
        os.mkdir(d)
        for phase, rate in _phases(d, n).items():
            ctx.record("metadata", cfg.name, phase, r, {"ops_s": rate})
        os.rmdir(d)
    run_rounds(ctx, "metadata", configs(ctx), body, f" ({n} files)")


def report(ctx):
    c = cells(ctx.records, "metadata")
    if not c:
        return ""
    rows = [[cfg] + [fmt(value(c, cfg, p, "ops_s")) for p in PHASES] for cfg in c]
    if "mergerfs-default" in c:
        rows.append(["peregrine / mergerfs"] + [fmt(ratio(value(c, "peregrine", p, "ops_s"),
                                                          value(c, "mergerfs-default", p, "ops_s")), 2)
                                                for p in PHASES])
    return f"{files(ctx)} files in one directory, one thread, operations per second.\n\n" + md_table(
        ["system"] + list(PHASES), rows)


def steps(ctx):
    return ctx.rounds() * len(configs(ctx))


CASE = Case("metadata", "create/stat/readdir/unlink", run, report, steps=steps)
