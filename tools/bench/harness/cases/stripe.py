"""Stripe unit sweep, 4 KiB to 1 MiB, random and sequential, on 4 shaped
members: the evidence for mkfs's default."""

from ..fio import Workload
from ..media import Media, Shape
from . import common, report_util
from .base import Case, cells, fmt, md_table, run_matrix, value


def units(ctx):
    return ["4K", "128K", "1M"] if ctx.quick else ["4K", "16K", "64K", "128K", "256K", "1M"]


def workloads(ctx):
    return [Workload("randread", qd=32), Workload("randwrite", qd=32),
            Workload("read", bs="1m", qd=8), Workload("write", bs="1m", qd=8)]


def media():
    return Media("shaped", "/dev/shm", Shape())


def run(ctx):
    t = ctx.args.transports[-1]
    cfgs = [common.peregrine(media(), t, stripe_unit=u, name=f"su-{u}") for u in units(ctx)]
    run_matrix(ctx, "stripe", cfgs, workloads(ctx))


def report(ctx):
    c = cells(ctx.records, "stripe")
    if not c:
        return ""
    ws = workloads(ctx)
    rows = []
    for u in units(ctx):
        rows.append([u] + [fmt(value(c, f"su-{u}", w.name, "iops" if w.bs == "4k" else "mib_s")) for w in ws])
    return (f"4 members, {media().shape.describe()} each; IOPS for 4 KiB, MiB/s for 1 MiB.\n\n"
            + md_table(["stripe unit"] + [w.name for w in ws], rows))


def plots(ctx, outdir):
    c = cells(ctx.records, "stripe")
    if not c:
        return []
    plt = report_util.pyplot()
    if plt is None:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    xs = list(range(len(units(ctx))))
    for w in workloads(ctx):
        ax = axes[0] if w.bs == "4k" else axes[1]
        ax.plot(xs, [value(c, f"su-{u}", w.name, "iops" if w.bs == "4k" else "mib_s") or 0
                     for u in units(ctx)], marker="o", label=w.name)
    for ax, ylab in zip(axes, ("IOPS", "MiB/s")):
        ax.set_xticks(xs)
        ax.set_xticklabels(units(ctx))
        ax.set_xlabel("stripe unit")
        ax.set_ylabel(ylab)
        ax.legend(fontsize=8)
    fig.suptitle("Stripe unit sweep, 4 shaped members")
    return report_util.save(plt, fig, outdir, "stripe")


def steps(ctx):
    return ctx.rounds() * len(units(ctx))


CASE = Case("stripe", "stripe unit sweep", run, report, plots, steps)
