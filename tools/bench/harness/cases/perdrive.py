"""Per-drive stack latency against device latency at QD 256 on 4 shaped
drives (Falcon's Figure 9): are the drives served evenly? From the
latency histograms of `peregrine stats --json`, taken before and after
the fio run and subtracted, so filling the test file does not count."""
import os

from .. import fio
from ..fio import Workload
from ..media import Media, Shape
from . import common, report_util
from .base import Case, fmt, md_table


def _lower(b):
    if b < 16:
        return b
    e = (b - 16) // 4 + 4
    sub = (b - 16) % 4
    return (1 << e) + sub * ((1 << e) >> 2)


def _upper(b):
    if b < 16:
        return b
    e = (b - 16) // 4 + 4
    sub = (b - 16) % 4
    return (1 << e) + (sub + 1) * ((1 << e) >> 2) - 1


def _delta(after, before):
    b = dict((k, n) for k, n in before)
    return {k: n - b.get(k, 0) for k, n in after if n - b.get(k, 0) > 0}


def _summary(hist):
    total = sum(hist.values())
    if not total:
        return None
    mean = sum((_lower(k) + _upper(k)) / 2 * n for k, n in hist.items()) / total
    out, seen = {"mean_us": mean / 1000, "ios": total}, 0
    for k in sorted(hist):
        seen += hist[k]
        for p in (50, 99):
            if f"p{p}_us" not in out and seen >= total * p / 100:
                out[f"p{p}_us"] = _upper(k) / 1000
    return out


def run(ctx):
    shape = Shape()
    media = Media("shaped", "/dev/shm", shape)
    t = ctx.args.transports[-1]
    cfg = common.peregrine(media, t, name="perdrive")
    ctx.session.progress.plan(2)
    for w in (Workload("randread", qd=256), Workload("randwrite", qd=256)):
        ctx.session.progress.step(f"perdrive: {w.name} on 4 drives of {shape.describe()}")
        target, teardown = cfg.setup(ctx)
        try:
            before = target.stats()
            raw = os.path.join(ctx.out_dir, "raw", "perdrive", f"{w.name}.json")
            ctx.record("perdrive", "perdrive", w.name, 1, fio.run(target, w, ctx.seconds(10), raw))
            after = target.stats()
            drives = []
            for db, da in zip(before["drives"], after["drives"]):
                drives.append({"drive": da["index"], "ios": da["ios"] - db["ios"],
                               "stack": _summary(_delta(da["stack_latency"], db["stack_latency"])),
                               "device": _summary(_delta(da["device_latency"], db["device_latency"]))})
            ctx.extras.setdefault("perdrive", {})[w.name] = drives
        finally:
            teardown()


def report(ctx):
    ex = ctx.extras.get("perdrive")
    if not ex:
        return ""
    out = [f"4 drives of {Shape().describe()}, fio QD 256, one job.\n"]
    for w, drives in ex.items():
        rows = []
        for d in drives:
            s, dev = d["stack"] or {}, d["device"] or {}
            rows.append([str(d["drive"]), str(d["ios"]), fmt(dev.get("mean_us"), 1), fmt(dev.get("p99_us"), 1),
                         fmt(s.get("mean_us"), 1), fmt(s.get("p99_us"), 1)])
        out.append(f"{w}:\n\n" + md_table(["drive", "IOs", "device mean us", "device p99 us",
                                            "stack mean us", "stack p99 us"], rows))
    return "\n".join(out)


def plots(ctx, outdir):
    ex = ctx.extras.get("perdrive")
    if not ex:
        return []
    plt = report_util.pyplot()
    if plt is None:
        return []
    fig, axes = plt.subplots(1, len(ex), figsize=(5 * len(ex), 4), squeeze=False)
    for ax, (w, drives) in zip(axes[0], ex.items()):
        xs = [d["drive"] for d in drives]
        ax.bar([x - 0.2 for x in xs], [(d["device"] or {}).get("mean_us", 0) for d in drives], 0.4,
               label="device")
        ax.bar([x + 0.2 for x in xs], [(d["stack"] or {}).get("mean_us", 0) for d in drives], 0.4,
               label="stack")
        ax.set_xticks(xs)
        ax.set_xlabel("drive")
        ax.set_ylabel("mean latency (us)")
        ax.set_title(w)
        ax.legend()
    fig.suptitle("Per-drive latency at QD 256 (Falcon Fig. 9)")
    return report_util.save(plt, fig, outdir, "perdrive")


CASE = Case("perdrive", "per-drive latency at QD 256", run, report, plots, lambda ctx: 2)
