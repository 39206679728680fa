"""128 KiB and 1 MiB sequential read and write, one application job."""
from ..fio import Workload
from . import common, report_util
from .base import Case, run_matrix

QD = 16


def workloads(ctx):
    return [Workload(rw, bs=bs, qd=QD) for bs in ("128k", "1m") for rw in ("read", "write")]


def configs(ctx, media):
    ts = ctx.args.transports
    out = [common.ideal(media, 4)]
    if media.name == "tmpfs":
        # The FUSE ceiling for bandwidth: every byte crosses /dev/fuse (or
        # the ring's buffers) once, whatever the members are.
        out += [common.null_fuse(media, t) for t in ts]
    out += [common.peregrine(media, t) for t in ts]
    out.append(common.per_volume(media, ts[-1]))
    out += common.peers(ctx, media)
    return out


def run(ctx):
    for media in ctx.media:
        run_matrix(ctx, f"seq-{media.name}", configs(ctx, media), workloads(ctx))


def report(ctx):
    def render(c, media):
        names = [w.name for w in workloads(ctx)]
        def row(cfg, ref):
            return [f"{cfg} / {ref}"] + [report_util.fmt(report_util.ratio(
                report_util.value(c, cfg, w, "mib_s"), report_util.value(c, ref, w, "mib_s")), 2) for w in names]
        rows = []
        for cfg in c:
            if not cfg.startswith("peregrine"):
                continue
            rows.append(row(cfg, "ideal"))
            null = "null-" + cfg[len("peregrine-"):]
            if null in c:
                rows.append(row(cfg, null))
            if ctx.peers.any:
                if any(n in c for n in report_util.STRIPING_PEERS):
                    rows.append([f"{cfg} / best mergerfs"] + [report_util.fmt(report_util.ratio(
                        report_util.value(c, cfg, w, "mib_s"),
                        report_util.best_of(c, w, report_util.STRIPING_PEERS, "mib_s")[0]), 2) for w in names])
                rows += report_util.peer_rows(c, names, cfg, "mib_s")
        if media.shape and ctx.peers.any:
            # The shaped aggregate's bandwidth: members x the shape's MB/s, in MiB/s.
            agg = round(4 * media.shape.mb_s * 1e6 / (1 << 20))
            rows += report_util.one_member_rows(c, names, agg, "mib_s")
        text = report_util.fio_table(c, workloads(ctx), ctx, f"MiB/s at QD {QD}, median over rounds")
        if rows:
            text += "\nratios (bandwidth):\n\n" + report_util.md_table(["ratio"] + names, rows)
        return text
    return report_util.media_report(ctx, "seq", render)


def plots(ctx, outdir):
    return report_util.media_plots(ctx, "seq", workloads(ctx), outdir, "sequential IO (MiB/s)")


def steps(ctx):
    return ctx.rounds() * sum(len(configs(ctx, m)) for m in ctx.media)


CASE = Case("seq", "sequential 128 KiB and 1 MiB", run, report, plots, steps)
