"""Does the shaping reproduce the shape? fio on ONE shaped member, through
peregrine-shape-fs (what fio and mergerfs sit on) and through a 1-member
peregrine volume (the shape applied in its drive thread), against what
the model promises: the IOPS cap at depth, the bandwidth cap for 1 MiB,
and the latency at QD 1 (plus one FUSE round trip, which the do-nothing
FUSE file's QD 1 latency measures)."""
from ..fio import Workload
from ..media import Media
from . import common
from .base import Case, cells, fmt, md_table, ratio, run_matrix, value


def workloads(ctx):
    return [Workload("randread", qd=1), Workload("randread", qd=32), Workload("randread", qd=128),
            Workload("read", bs="1m", qd=8)]


def configs(ctx):
    shape = ctx.shaped_media.shape
    tmpfs = Media("tmpfs", "/dev/shm")
    shaped = Media("shaped", "/dev/shm", shape)
    return [common.ideal(shaped, 1, label="shape-fs"),
            common.peregrine(shaped, ctx.args.transports[-1], members=1, name="peregrine-1-shaped"),
            common.null_fuse(tmpfs, ctx.args.transports[-1])]


def run(ctx):
    run_matrix(ctx, "shapecheck", configs(ctx), workloads(ctx))


def report(ctx):
    c = cells(ctx.records, "shapecheck")
    if not c:
        return ""
    s = ctx.shaped_media.shape
    null = f"null-{ctx.args.transports[-1]}"
    fuse_rtt = value(c, null, "randread-4k-qd1", "lat_us")
    rows = []
    for cfg in ("shape-fs", "peregrine-1-shaped"):
        rows.append([cfg,
                     fmt(value(c, cfg, "randread-4k-qd1", "lat_us"), 1),
                     fmt(value(c, cfg, "randread-4k-qd32")), fmt(ratio(value(c, cfg, "randread-4k-qd32"), s.iops), 2),
                     fmt(value(c, cfg, "randread-4k-qd128")), fmt(ratio(value(c, cfg, "randread-4k-qd128"), s.iops), 2),
                     fmt(value(c, cfg, "read-1m-qd8", "mib_s")),
                     fmt(ratio(value(c, cfg, "read-1m-qd8", "mib_s"), s.mb_s * 1e6 / 2 ** 20), 2)])
    return (f"Model: {s.describe()}. A FUSE round trip here (do-nothing file, QD 1): "
            f"{fmt(fuse_rtt, 1)} us, so QD 1 should show about {s.latency_us} us plus that.\n\n"
            + md_table(["one shaped member via", "QD 1 lat us", "QD 32 IOPS", "/ cap", "QD 128 IOPS", "/ cap",
                        "1 MiB MiB/s", "/ cap"], rows))


CASE = Case("shapecheck", "does the shaping layer reproduce the shape", run, report,
            steps=lambda ctx: ctx.rounds() * 3)
