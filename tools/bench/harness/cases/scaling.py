"""Scaling over 1, 2, 4, 8 shaped members with one application job.

The shape is chosen from this machine's own L (do-nothing FUSE file and a
tmpfs member, measured first): each member gets fraction * L / 8 IOPS, so
even 8 members ask the daemon for at most that fraction of what FUSE and
the IO path can carry on these CPUs. Run at 0.5 L and at 0.8 L.

Beside the aggregate, each row gives the ceiling of random routing
(peregrine-shaped-ceiling, a model with no software in the loop): one job
whose IOs each go to a random member leaves a member idle now and then,
so no volume reaches the aggregate with 8 members at QD 128.
"""
import os
import re
import subprocess

from ..fio import Workload
from ..media import Media, Shape
from . import common, report_util
from .base import Case, cells, fmt, limit, md_table, ratio, run_matrix, value

FRACTIONS = (0.5, 0.8)


def members(ctx):
    return [1, 4] if ctx.quick else [1, 2, 4, 8]


def fractions(ctx):
    return FRACTIONS[:1] if ctx.quick else FRACTIONS


def qd(ctx):
    return 32 if ctx.quick else 128


def workloads(ctx):
    return [Workload(rw, qd=qd(ctx)) for rw in ("randread", "randwrite")]


# L decides how hard every row is, and one round of it varied by a quarter
# between runs here (103K and 128K): so at least this many, medians.
CALIBRATION_ROUNDS = 3


def calibrate(ctx):
    t = ctx.args.transports[-1]
    stated = getattr(ctx.args, "scaling_l", None)
    if stated:
        ctx.extras["scaling"] = {"L": stated, "transport": t, "stated": True}
        return stated
    tmpfs = Media("tmpfs", "/dev/shm")
    rounds = 1 if ctx.quick else max(CALIBRATION_ROUNDS, ctx.rounds())
    run_matrix(ctx, "scaling-calibration", [common.one_member(tmpfs), common.null_fuse(tmpfs, t)],
               [Workload("randread", qd=qd(ctx))], rounds=rounds)
    c = cells(ctx.records, "scaling-calibration")
    w = f"randread-4k-qd{qd(ctx)}"
    L = limit(value(c, f"null-{t}", w), value(c, "I", w))
    ctx.extras["scaling"] = {"L": L, "transport": t,
                             "C_rounds": value(c, f"null-{t}", w, "iops_rounds"),
                             "I_rounds": value(c, "I", w, "iops_rounds")}
    return L


def _spread(vals):
    return f"{fmt(min(vals))}-{fmt(max(vals))}" if vals else "-"


def describe_L(ex, depth):
    head = f"L on this machine ({ex['transport']}, 4 KiB randread QD {depth}): {fmt(ex['L'])} IOPS"
    if ex.get("stated"):
        return head + ", as stated with --scaling-l (not measured in this run).\n"
    c, i = ex.get("C_rounds"), ex.get("I_rounds")
    if not c or not i:
        return head + ".\n"
    if len(c) == 1 or len(i) == 1:
        return head + f", from one calibration round (do-nothing FUSE file C {fmt(c[0])}, one tmpfs member I {fmt(i[0])}).\n"
    return (head + f", from the medians of {len(c)} calibration rounds (do-nothing FUSE file C "
            f"{_spread(c)}, one tmpfs member I {_spread(i)}).\n")


def ceiling(ctx, n, shape):
    """Fraction of the aggregate that random routing allows n members of
    this shape at this depth, or None if the model is not built."""
    tool = ctx.bins.shaped_ceiling
    if not os.path.exists(tool):
        return None
    out = subprocess.run([tool, "--drives", str(n), "--depth", str(qd(ctx)), "--iops", str(shape.iops),
                          "--latency-us", str(shape.latency_us), "--qd", str(shape.qd), "--transit-us", "0"],
                         capture_output=True, text=True)
    m = re.search(r"transit\s+0 us: ([0-9.]+)", out.stdout)
    return float(m.group(1)) if out.returncode == 0 and m else None


def run(ctx):
    L = calibrate(ctx)
    if not L:
        ctx.note("scaling", "calibration failed (no L); scaling not measured")
        return
    t = ctx.args.transports[-1]
    for f in fractions(ctx):
        shape = Shape(latency_us=80, qd=32, iops=int(f * L / 8), mb_s=500)
        ctx.extras["scaling"][str(f)] = shape.describe()
        ctx.extras["scaling"][f"ceiling-{f}"] = {str(n): ceiling(ctx, n, shape) for n in members(ctx)}
        media = Media("shaped", "/dev/shm", shape)
        cfgs = []
        for n in members(ctx):
            cfgs.append(common.peregrine(media, t, members=n, name=f"per-drive-{n}"))
            cfgs.append(common.peregrine(media, t, members=n, options=("engine.scheduler=per-volume",),
                                         name=f"per-volume-{n}"))
        run_matrix(ctx, f"scaling-{f}", cfgs, workloads(ctx), f" at {f} L")


def report(ctx):
    ex = ctx.extras.get("scaling")
    if not ex or not ex.get("L"):
        return "\n".join(ctx.notes.get("scaling", []))
    out = [describe_L(ex, qd(ctx))]
    out.append(f"routing ceiling: the fraction of the aggregate one job at QD {qd(ctx)} can get when each IO "
               "goes to a random member, with no software in the loop (peregrine-shaped-ceiling, a model); "
               "\"/ ceiling\" is the measured IOPS against it.\n")
    for f in fractions(ctx):
        c = cells(ctx.records, f"scaling-{f}")
        if not c:
            continue
        iops = int(f * ex["L"] / 8)
        ceilings = ex.get(f"ceiling-{f}") or {}
        out.append(f"### at {f} L: each member {ex[str(f)]}\n")
        rows = []
        for n in members(ctx):
            agg = n * iops
            ceil = ceilings.get(str(n))
            row = [str(n), fmt(agg), fmt(ceil, 3)]
            for w in workloads(ctx):
                pd, pv = value(c, f"per-drive-{n}", w.name), value(c, f"per-volume-{n}", w.name)
                row += [fmt(pd), fmt(ratio(pd, agg), 3), fmt(ratio(pd, agg * ceil) if ceil else None, 3),
                        fmt(ratio(pd, pv), 2)]
            rows.append(row)
        header = ["members", "aggregate IOPS", "routing ceiling"]
        for w in workloads(ctx):
            header += [f"{w.rw} per-drive", "/ aggregate", "/ ceiling", "/ per-volume"]
        out.append(md_table(header, rows))
    return "\n".join(out)


def plots(ctx, outdir):
    ex = ctx.extras.get("scaling")
    if not ex or not ex.get("L"):
        return []
    plt = report_util.pyplot()
    if plt is None:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for f in fractions(ctx):
        c = cells(ctx.records, f"scaling-{f}")
        iops = int(f * ex["L"] / 8)
        for sched in ("per-drive", "per-volume"):
            for w in workloads(ctx):
                ys = [ratio(value(c, f"{sched}-{n}", w.name), n * iops) for n in members(ctx)]
                ax.plot(members(ctx), [y or 0 for y in ys], marker="o", label=f"{sched} {w.rw} @{f}L")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("members")
    ax.set_ylabel("IOPS / shaped aggregate")
    ax.set_title("Scaling with one application job, shaped members")
    ax.legend(fontsize=7)
    return report_util.save(plt, fig, outdir, "scaling")


def steps(ctx):
    return ctx.rounds() * (2 + len(fractions(ctx)) * 2 * len(members(ctx)))


CASE = Case("scaling", "scaling over shaped members", run, report, plots, steps)
