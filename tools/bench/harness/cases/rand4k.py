"""4 KiB random read and write at QD 1, 32, 128 with one application job,
and with 2 and 4 jobs sharing the same total depth, on every medium."""
from ..fio import Workload
from . import common, report_util
from .base import Case, cells, run_matrix


def workloads(ctx):
    qds = [1, 32] if ctx.quick else [1, 32, 128]
    out = [Workload(rw, qd=qd) for rw in ("randread", "randwrite") for qd in qds]
    for jobs in ([2] if ctx.quick else [2, 4]):
        for qd in ([32] if ctx.quick else [32, 128]):
            out += [Workload(rw, qd=qd, jobs=jobs) for rw in ("randread", "randwrite")]
    return out


def configs(ctx, media):
    ts = ctx.args.transports
    out = []
    if not media.shape:
        out.append(common.one_member(media))
    out.append(common.ideal(media, 4))
    if media.name == "tmpfs":
        out += [common.null_fuse(media, t) for t in ts]
    out += [common.peregrine(media, t) for t in ts]
    out.append(common.per_volume(media, ts[-1]))
    if not ctx.quick:
        out.append(common.peregrine(media, ts[-1], members=1, name="peregrine-1-member"))
    out += common.peers(ctx, media)
    return out


def run(ctx):
    for media in ctx.media:
        run_matrix(ctx, f"rand4k-{media.name}", configs(ctx, media), workloads(ctx), "")


def report(ctx):
    null_cells = cells(ctx.records, "rand4k-tmpfs")  # C comes from the tmpfs run
    return report_util.media_report(ctx, "rand4k", lambda c, media: (
        report_util.fio_table(c, workloads(ctx), ctx) +
        report_util.ratio_table(c, workloads(ctx), ctx, media, null_cells)))


def plots(ctx, outdir):
    return report_util.media_plots(ctx, "rand4k", workloads(ctx), outdir, "4 KiB random IO")


def steps(ctx):
    return ctx.rounds() * sum(len(configs(ctx, m)) for m in ctx.media)


CASE = Case("rand4k", "4 KiB random IO: depth, jobs, media", run, report, plots, steps)
