"""Tables and plots the fio cases share: one row per configuration, one
column per workload, and ratio rows against the references of the same run."""
import os

from .base import fmt, limit, md_table, ratio, value  # noqa: F401 (re-exported)


def _metric(w):
    return "iops" if w.bs in ("512", "4k") else "mib_s"


# Peer rows that serve a file from one member only (they cannot stripe):
# their label says so wherever they are shown, and the best-peer ratio
# leaves the kernel-passthrough one out (it is no FUSE daemon serving IO).
ONE_MEMBER = {
    "mergerfs-passthrough": "one file on one member",
    "ph-uring": "one member",
    "ph-classic": "one member",
}
STRIPING_PEERS = ("mergerfs-default", "mergerfs-t32")
SERVING_PEERS = STRIPING_PEERS + ("ph-uring", "ph-classic")


def label(cfg):
    return f"{cfg} ({ONE_MEMBER[cfg]})" if cfg in ONE_MEMBER else cfg


def fio_table(c, workloads, ctx, title="IOPS (MiB/s for large blocks), median over rounds"):
    names = [w.name for w in workloads]
    out = [f"{title}:\n"]
    out.append(md_table(["config"] + names,
                        [[label(cfg)] + [fmt(value(c, cfg, w.name, _metric(w))) for w in workloads] for cfg in c
                         if any(value(c, cfg, w.name) is not None for w in workloads)]))
    out.append("\nmean completion latency (us) / daemon CPU per IO (us):\n")
    out.append(md_table(["config"] + names,
                        [[label(cfg)] + [f"{fmt(value(c, cfg, w.name, 'lat_us'), 1)} / "
                                         f"{fmt(value(c, cfg, w.name, 'cpu_us_per_io'), 1)}" for w in workloads]
                         for cfg in c if any(value(c, cfg, w.name) is not None for w in workloads)]))
    split = [[label(cfg)] + [f"{fmt(value(c, cfg, w.name, 'user_us_per_io'), 2)} + "
                             f"{fmt(value(c, cfg, w.name, 'sys_us_per_io'), 2)}" for w in workloads]
             for cfg in c if any(value(c, cfg, w.name, 'cpu_us_per_io') and
                                 value(c, cfg, w.name, 'user_us_per_io') is not None for w in workloads)]
    if split:
        # The kernel's share (system) is much the same for every FUSE daemon
        # doing the same copies; the daemon's own code shows in user time.
        # Runs recorded before the split have no user figure: no table.
        out.append("\ndaemon CPU per IO (us), user + system:\n")
        out.append(md_table(["config"] + names, split))
    rss = [[label(cfg), fmt(value(c, cfg, "daemon", "peak_rss_kib") / 1024, 1)] for cfg in c
           if value(c, cfg, "daemon", "peak_rss_kib")]
    if rss:
        out.append("\ndaemon peak RSS (MiB):\n")
        out.append(md_table(["config", "peak RSS MiB"], rss))
    return "\n".join(out)


def best_of(c, w, configs, metric="iops"):
    """(value, config) of the best of `configs` in cell w, or (None, None)."""
    got = [(value(c, cfg, w, metric), cfg) for cfg in configs if cfg in c]
    got = [g for g in got if g[0]]
    return max(got) if got else (None, None)


def best_mergerfs(c, w):
    return best_of(c, w, STRIPING_PEERS)[0]


def peer_rows(c, names, p, metric="iops"):
    """Ratio rows of peregrine row p against the peers in c: the best
    serving peer in each cell (named), and the one-file passthrough row."""
    rows = []
    if any(cfg in c for cfg in ("ph-uring", "ph-classic")):
        row = [f"{p} / best peer"]
        for w in names:
            best, who = best_of(c, w, SERVING_PEERS, metric)
            r = ratio(value(c, p, w, metric), best)
            row.append(f"{fmt(r, 2)} ({who})" if r is not None else "-")
        rows.append(row)
    if "mergerfs-passthrough" in c:
        rows.append([f"{p} / {label('mergerfs-passthrough')}"] +
                    [fmt(ratio(value(c, p, w, metric), value(c, "mergerfs-passthrough", w, metric)), 2)
                     for w in names])
    return rows


def one_member_rows(c, names, agg, metric="iops"):
    """On shaped media, what not striping costs: each one-member peer
    against the aggregate of the shaped members (about 1/members)."""
    return [[f"{label(cfg)} / shaped aggregate ({agg})"] +
            [fmt(ratio(value(c, cfg, w, metric), agg), 2) for w in names]
            for cfg in ONE_MEMBER if cfg in c]


def ratio_table(c, workloads, ctx, media, null_cells):
    rows = []
    names = [w.name for w in workloads]
    for t in ctx.args.transports:
        p = f"peregrine-{t}"
        if p not in c:
            continue
        if media.shape:
            agg = 4 * media.shape.iops
            rows.append([f"{p} / shaped aggregate ({agg})"] +
                        [fmt(ratio(value(c, p, w), agg), 2) for w in names])
        else:
            row = [f"{p} / L-{t}"]
            for w in names:
                C = value(null_cells, f"null-{t}", w)
                i_ref = value(c, "I", w)
                row.append(fmt(ratio(value(c, p, w), limit(C, i_ref)), 2))
            rows.append(row)
        rows.append([f"{p} / ideal"] + [fmt(ratio(value(c, p, w), value(c, "ideal", w)), 2) for w in names])
        rows.append([f"{p} / best mergerfs"] + [fmt(ratio(value(c, p, w), best_mergerfs(c, w)), 2) for w in names])
        rows += peer_rows(c, names, p)
    last = f"peregrine-{ctx.args.transports[-1]}"
    if "per-volume" in c:
        rows.append([f"{last} / per-volume"] + [fmt(ratio(value(c, last, w), value(c, "per-volume", w)), 2)
                                                 for w in names])
    if "peregrine-1-member" in c:
        rows.append([f"{last} 4 members / 1 member"] +
                    [fmt(ratio(value(c, last, w), value(c, "peregrine-1-member", w)), 2) for w in names])
    if media.shape:
        rows += one_member_rows(c, names, 4 * media.shape.iops)
    if not rows:
        return ""
    return "\nratios (IOPS):\n\n" + md_table(["ratio"] + names, rows)


def pyplot():
    """matplotlib's pyplot for files (no display), or None without it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def save(plt, fig, outdir, name):
    fig.tight_layout()
    path = os.path.join(outdir, f"{name}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def media_report(ctx, prefix, render):
    """One section per medium of a case run on each (rand4k, seq):
    render(cells, media) gives its tables; the case's notes follow."""
    from .base import cells
    text = []
    for media in ctx.media:
        case = f"{prefix}-{media.name}"
        c = cells(ctx.records, case)
        if not c:
            continue
        shape = f" ({media.shape.describe()} per member)" if media.shape else ""
        text += [f"### {media.name}{shape}\n", render(c, media)]
        text += [f"- {n}" for n in ctx.notes.get(case, [])]
        text.append("")
    return "\n".join(text)


def media_plots(ctx, prefix, workloads, outdir, title):
    """One bar plot per medium of a case run on each (rand4k, seq)."""
    from .base import cells
    paths = []
    for media in ctx.media:
        c = cells(ctx.records, f"{prefix}-{media.name}")
        if c:
            paths += bar_plot(c, workloads, f"{prefix}-{media.name}", outdir, f"{title}, {media.name} members")
    return paths


def bar_plot(c, workloads, name, outdir, title):
    """Grouped bars: IOPS per workload, one bar per configuration."""
    plt = pyplot()
    configs = [cfg for cfg in c if any(value(c, cfg, w.name) for w in workloads)]
    if plt is None or not configs:
        return []
    fig, ax = plt.subplots(figsize=(max(8, len(workloads) * 1.1), 4.5))
    width = 0.8 / len(configs)
    for i, cfg in enumerate(configs):
        xs = [j + i * width for j in range(len(workloads))]
        ys = [(value(c, cfg, w.name, _metric(w)) or 0) for w in workloads]
        ax.bar(xs, ys, width, label=label(cfg))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels([w.name for w in workloads], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("IOPS (MiB/s for large blocks)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    return save(plt, fig, outdir, name)
