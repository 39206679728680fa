"""The daemon's cost: peak RSS during a write flood the drives cannot keep
up with (the application never waits on its own: 4 jobs x QD 64 of 1 MiB
direct writes onto slow shaped drives), against the bound the settings
imply; and CPU seconds per GiB and per million IOs from the other cases."""
import os

from ..fio import Workload
from ..media import Media, Shape
from . import common
from .base import Case, cells, fmt, md_table, run_matrix, value

SLOW = Shape(latency_us=200, qd=16, iops=2000, mb_s=100)


def workloads(ctx):
    return [Workload("randwrite", bs="1m", qd=256, jobs=4), Workload("randwrite", bs="4k", qd=256, jobs=4)]


def run(ctx):
    media = Media("shaped", "/dev/shm", SLOW)
    cfgs = [common.peregrine(media, t, name=f"flood-{t}") for t in ctx.args.transports]
    run_matrix(ctx, "memory", cfgs, workloads(ctx))


def bound_mib(transport):
    """What the default settings let the daemon hold in request data, MiB:
    every request in flight pins one buffer of fuse.max_request_bytes
    (1 MiB), and the kernel keeps at most fuse.max_background (256) in
    flight; the read and write op pools keep at most 48 MiB idle each
    (op_pool.h); classic's workers (fuse.workers, 2) each hold a receive
    buffer, while io-uring allocates every ring entry's payload
    (fuse.ring_depth 128 per CPU) at mount."""
    requests, pools = 256, 2 * 48
    transport_buffers = 128 * os.cpu_count() if transport == "io-uring" else 2
    return requests + pools + transport_buffers


def report(ctx):
    c = cells(ctx.records, "memory")
    out = []
    if c:
        rows = []
        for t in ctx.args.transports:
            cfg = f"flood-{t}"
            rss = value(c, cfg, "daemon", "peak_rss_kib")
            rows.append([cfg, fmt(rss / 1024 if rss else None, 1), str(bound_mib(t)),
                         fmt(value(c, cfg, workloads(ctx)[0].name, "mib_s"), 1)])
        out.append(f"4 drives of {SLOW.describe()}; fio 4 jobs x QD 64, direct 1 MiB then 4 KiB random "
                   "writes. The bound is the request data the default settings allow: requests in flight "
                   "(fuse.max_background) x fuse.max_request_bytes, the idle op pools, and the "
                   "transport's buffers (classic: one per worker; io-uring: every ring entry's payload).\n")
        out.append(md_table(["config", "peak RSS MiB", "request data bound MiB", "MiB/s written"], rows))
    # CPU cost from every peregrine cell of the fio cases.
    rows = []
    for rec_case in sorted({r["case"] for r in ctx.records if r["case"].startswith(("rand4k", "seq"))}):
        cc = cells(ctx.records, rec_case)
        for cfg, works in cc.items():
            if not cfg.startswith("peregrine-") or cfg == "peregrine-1-member":
                continue
            for w, m in works.items():
                # One line per medium and transport at QD 32, and 1 MiB sequential.
                if not m.get("ios") or not (w.endswith("-qd32") or "-1m-" in w):
                    continue
                secs = ctx.seconds()
                gib = m.get("mib_s", 0) * secs / 1024
                rows.append([rec_case, cfg, w, fmt(m.get("cpu_us_per_io"), 2),
                             f"{fmt(m.get('user_us_per_io'), 2)} / {fmt(m.get('sys_us_per_io'), 2)}",
                             fmt(m.get("daemon_cpu_s", 0) / gib if gib else None, 2)])
    if rows:
        out.append("\nDaemon CPU: seconds per million IOs (= us per IO) and seconds per GiB moved:\n")
        out.append(md_table(["case", "config", "workload", "CPU s / M IOs", "of it user / system", "CPU s / GiB"],
                            rows))
    return "\n".join(out)


def steps(ctx):
    return ctx.rounds() * len(ctx.args.transports)


CASE = Case("memory", "daemon memory under a write flood, CPU cost", run, report, steps=steps)
