"""Every kind of system the other cases use starts, serves fio, yields a
record and is torn down: the CI check of the harness itself (no numbers
are judged). Not part of a default run."""
from ..fio import Workload
from ..media import Media, Shape
from . import common, report_util
from .base import Case, cells, run_matrix


def workloads(ctx):
    return [Workload("randread", qd=4), Workload("randwrite", qd=4)]


def configs(ctx):
    tmpfs = Media("tmpfs", "/dev/shm")
    shaped = Media("shaped", "/dev/shm", Shape())
    ts = ctx.args.transports
    cfgs = [common.ideal(tmpfs, 2)]
    cfgs += [common.null_fuse(tmpfs, t) for t in ts]
    cfgs += [common.peregrine(tmpfs, t, members=2) for t in ts]
    cfgs.append(common.per_volume(shaped, ts[-1], members=2, name="per-volume-shaped"))
    cfgs.append(common.ideal(shaped, 2, label="ideal-shaped"))
    if ctx.have_mergerfs:
        cfgs.append(common.mergerfs(ctx, tmpfs, "mergerfs-default", members=2))
    # Peers given by path: each kind starts and serves too.
    cfgs += [c for c in common.peers(ctx, tmpfs, members=2) if c.name not in ("mergerfs-default", "mergerfs-t32")]
    return cfgs


def run(ctx):
    run_matrix(ctx, "smoke", configs(ctx), workloads(ctx))


def report(ctx):
    c = cells(ctx.records, "smoke")
    return report_util.fio_table(c, workloads(ctx), ctx) + "\n" + "\n".join(
        f"- {n}" for n in ctx.notes.get("smoke", []))


CASE = Case("smoke", "every system starts and serves", run, report,
            steps=lambda ctx: ctx.rounds() * len(configs(ctx)), in_default=False)
