"""The graph tools (BFS, k-core, CC, PageRank, TC, BC from 2 sources) on 4
shaped drives against 1,
and against the per-volume baseline on 4, with drives slow enough to be
the bottleneck at 4 (--graph-shape). One IO thread per algorithm. Two
graphs: a generated Kronecker graph, and a uniform random graph of the same
scale written as a text edge list (tools/bench/graph/make-edge-list) that
is copied onto the volume and imported there, so import + the algorithms
on a user's kind of input are timed end to end."""
import json
import os
import shutil
import subprocess

from .. import systems
from ..media import Shape
from .base import Case, Config, cells, fmt, md_table, ratio, run_rounds, value

ALGORITHMS = ("bfs", "sssp", "kcore", "cc", "pagerank", "tc", "bc")


def scale(ctx):
    return ctx.args.graph_scale or (12 if ctx.quick else 20)


def shape(ctx):
    lat, qd, iops, mbs = (int(x) for x in ctx.args.graph_shape.split(":"))
    return Shape(lat, qd, iops, mbs)


def configs(ctx):
    def volume(n, sched):
        def setup(ctx):
            v = systems.Volume(ctx.session, ctx.bins, "/dev/shm", n, transport=ctx.args.transports[-1],
                               options=(f"engine.scheduler={sched}",), shape=shape(ctx), fill_file=False,
                               member_mib=max(256, (4 << scale(ctx)) // 1024 // n * 2 + 128),
                               label=f"{n}-{sched}")
            return v, v.teardown
        return setup
    return [Config("4-drives", volume(4, "per-drive")), Config("1-drive", volume(1, "per-drive")),
            Config("4-drives-per-volume", volume(4, "per-volume"))]


def run(ctx):
    s = scale(ctx)
    src = ctx.session.workdir("/dev/shm", "graph")
    ctx.session.progress.plan(1)
    ctx.session.progress.step(f"graph: generating a Kronecker graph of scale {s}")
    subprocess.run([ctx.bins.graph, "gen", "--scale", str(s), "--out", os.path.join(src, f"s{s}"), "--quiet"],
                   check=True)
    edge_list = os.path.join(src, f"uniform-s{s}.txt")
    subprocess.run([os.path.join(os.path.dirname(ctx.bins.graph_bench), "make-edge-list"), "--scale", str(s),
                    "--out", edge_list], check=True)

    def bench(cfg, v, r, suffix, extra):
        out = os.path.join(ctx.out_dir, "raw", "graph", f"{cfg.name}{suffix}-r{r}.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([ctx.bins.graph_bench, "--scale", str(s), "--dir", v.mnt, "--bin", ctx.bins.graph,
                        "--label", cfg.name, "--json-out", out, "--bfs-roots", "2" if ctx.quick else "8", *extra],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            for run_ in json.load(f)["runs"]:
                if run_.get("algorithm") in ALGORITHMS:
                    ctx.record("graph", cfg.name, run_["algorithm"] + suffix, r,
                               {"wall_s": run_["wall_seconds"], "cpu_s": run_["cpu_seconds"],
                                "mb_s": run_.get("mb_per_s", 0)})
                elif run_.get("command") == "import":
                    ctx.record("graph", cfg.name, "import", r,
                               {"wall_s": run_["wall_seconds"], "mb_s": run_["input_mb_per_s"]})

    def body(cfg, v, r):
        shutil.copytree(os.path.join(src, f"s{s}"), os.path.join(v.mnt, f"s{s}"))
        bench(cfg, v, r, "", ["--reuse"])
        shutil.rmtree(os.path.join(v.mnt, f"s{s}"))
        on_volume = os.path.join(v.mnt, os.path.basename(edge_list))
        shutil.copyfile(edge_list, on_volume)
        bench(cfg, v, r, "-imported", ["--edge-list", on_volume])
    run_rounds(ctx, "graph", configs(ctx), body, f" (scale {s}, {shape(ctx).describe()} per drive)")


def report(ctx):
    c = cells(ctx.records, "graph")
    if not c:
        return ""
    rows = []
    for a in ALGORITHMS:
        four, one, pv = (value(c, k, a, "wall_s") for k in ("4-drives", "1-drive", "4-drives-per-volume"))
        rows.append([a, fmt(four, 2), fmt(one, 2), fmt(pv, 2), fmt(ratio(one, four), 2), fmt(ratio(pv, four), 2)])
    imported = []
    for a in ("import",) + tuple(a + "-imported" for a in ALGORITHMS):
        four, one, pv = (value(c, k, a, "wall_s") for k in ("4-drives", "1-drive", "4-drives-per-volume"))
        mbs = value(c, "4-drives", a, "mb_s") if a == "import" else None
        name = a.replace("-imported", "") + (f" ({fmt(mbs)} MB/s of text on 4)" if mbs else "")
        imported.append([name, fmt(four, 2), fmt(one, 2), fmt(pv, 2), fmt(ratio(one, four), 2),
                         fmt(ratio(pv, four), 2)])
    head = ["algorithm", "4 drives", "1 drive", "4, per-volume", "4 vs 1 (speedup)", "per-drive vs per-volume"]
    return (f"Kronecker scale {scale(ctx)}, each drive {shape(ctx).describe()}; wall seconds (median).\n\n"
            + md_table(head, rows)
            + f"\n\nUniform random graph of the same size, imported on the volume from a text edge list "
              f"(make-edge-list); wall seconds (median).\n\n" + md_table(head, imported))


def steps(ctx):
    return 1 + ctx.rounds() * len(configs(ctx))


CASE = Case("graph", "graph tools on shaped drives", run, report, steps=steps)
