"""GAP's kernels against gapbs: peregrine-graph on a 4-member volume over
tmpfs members (the drives cost nothing, so what remains is the tools' own
cost) and gapbs built from its public source (--peer-gapbs DIR, the
directory holding its converter, bfs, sssp, cc, pr, tc and bc after
`make`), on the same graph: a Kronecker graph with weights in [1, 255]
from `peregrine-graph gen --weighted` (GAP's kron weights), written for
gapbs with `peregrine-graph export` (a .wel edge list) and turned into its
serialized forms once (`converter -f G.wel -s -b G.sg`, and `-wb G.wsg`
for sssp). gapbs runs at its
defaults (OpenMP on every CPU, the graph in memory) and reports its own
trial time, loading excluded; peregrine-graph's wall_seconds cover the
algorithm only, and include reading the graph from the volume. It runs
twice: at its default (--memory auto: the lists are read once, kept in
memory and computed on by every CPU; cc and tc read once anyway) and with
--memory 0 (every pass reads the volume: the semi-external path). Settings matched: BFS 8 sources (seconds per search), PageRank 20
iterations, no early stop (gapbs -i 20 -t 0; --iterations 20 --epsilon 0),
BC 4 sources (gapbs -i 4; --roots 4), SSSP from peregrine-graph's default
root (the vertex of highest degree, given to gapbs with -r) with each at
its own default bucket width (gapbs -d 2, GAP's kron setting; peregrine's
the largest weight, 255: each of its buckets costs a read of its lists).
Seconds, median of rounds. Not in the default run: it needs
--peer-gapbs."""
import json
import os
import re
import subprocess

from .. import systems
from .base import Case, cells, fmt, md_table, ratio, value
from .gap_agreement import agreement, agreement_table

# (peregrine-graph command and options, gapbs program and options, searches the time covers)
KERNELS = (
    ("bfs", ["--roots", "8"], "bfs", ["-n", "8"], 8),
    ("sssp", [], "sssp", ["-d", "2", "-n", "3"], 1),
    ("cc", [], "cc", ["-n", "3"], 1),
    ("pagerank", ["--iterations", "20", "--epsilon", "0"], "pr", ["-i", "20", "-t", "0", "-n", "3"], 1),
    ("tc", [], "tc", ["-n", "1"], 1),
    ("bc", ["--roots", "4"], "bc", ["-i", "4", "-n", "3"], 1),
)


def scale(ctx):
    return ctx.args.graph_scale or (12 if ctx.quick else 20)


def _gapbs_seconds(out):
    m = re.search(r"Average Time:\s+([0-9.]+)", out)
    if not m:
        raise RuntimeError("gapbs printed no 'Average Time': " + out[-400:])
    return float(m.group(1))


def run(ctx):
    gap = ctx.args.peer_gapbs
    if not gap:
        ctx.note("gap", "not measured: give --peer-gapbs DIR (gapbs built from its source with make)")
        return
    missing = [p for p in ("converter", "bfs", "sssp", "cc", "pr", "tc", "bc")
               if not os.access(os.path.join(gap, p), os.X_OK)]
    if missing:
        ctx.note("gap", f"not measured: {gap} lacks {', '.join(missing)} (run make there)")
        return
    s = scale(ctx)
    rounds = ctx.rounds()
    ctx.session.progress.plan(2 + rounds)
    ctx.session.progress.step(f"gap: Kronecker scale {s} on the volume, exported for gapbs")
    vol = systems.Volume(ctx.session, ctx.bins, "/dev/shm", 4, transport=ctx.args.transports[-1], fill_file=False,
                         member_mib=max(256, (4 << s) // 1024 // 4 * 2 + 128), label="gap")
    try:
        graph = os.path.join(vol.mnt, f"s{s}")
        subprocess.run([ctx.bins.graph, "gen", "--scale", str(s), "--weighted", "--out", graph, "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        work = ctx.session.workdir("/dev/shm", "gap")
        wel = os.path.join(work, f"s{s}.wel")
        sg, wsg = os.path.join(work, f"s{s}.sg"), os.path.join(work, f"s{s}.wsg")
        subprocess.run([ctx.bins.graph, "export", "--graph", graph, "--out", wel], check=True,
                       stdout=subprocess.DEVNULL)
        for flags, out in ((["-b"], sg), (["-wb"], wsg)):
            subprocess.run([os.path.join(gap, "converter"), "-f", wel, "-s", *flags, out], check=True,
                           stdout=subprocess.DEVNULL)
        os.unlink(wel)
        for r in range(1, rounds + 1):
            ctx.session.progress.step(f"gap: round {r}/{rounds}, {len(KERNELS)} kernels each way")
            for ours, ours_opts, theirs, their_opts, searches in KERNELS:
                for system, memory in (("peregrine-graph --memory 0", "0"), ("peregrine-graph", "auto")):
                    out = json.loads(subprocess.run([ctx.bins.graph, ours, "--graph", graph, "--json",
                                                     "--memory", memory, *ours_opts],
                                                    check=True, capture_output=True, text=True).stdout)
                    ctx.record("gap", system, ours, r, {"wall_s": out["wall_seconds"] / searches})
                # sssp: the same root for both, on the weighted graph.
                theirs_graph, root = (wsg, ["-r", str(out["root"])]) if ours == "sssp" else (sg, [])
                out = subprocess.run([os.path.join(gap, theirs), "-f", theirs_graph, *root, *their_opts], check=True,
                                     capture_output=True, text=True).stdout
                ctx.record("gap", "gapbs", ours, r, {"wall_s": _gapbs_seconds(out)})
        ctx.session.progress.step("gap: the same results? each kernel once more, gapbs with -a")
        ctx.extras.setdefault("gap", {})["agreement"] = agreement(ctx, gap, graph, sg, wsg, work)
    finally:
        vol.teardown()


def report(ctx):
    c = cells(ctx.records, "gap")
    if not c:
        return "\n".join(ctx.notes.get("gap", []))
    rows = []
    for ours, _, theirs, _, _ in KERNELS:
        mine, peer = value(c, "peregrine-graph", ours, "wall_s"), value(c, "gapbs", ours, "wall_s")
        read = value(c, "peregrine-graph --memory 0", ours, "wall_s")
        rows.append([f"{ours} ({theirs})", fmt(mine, 3), fmt(read, 3), fmt(peer, 3), fmt(ratio(mine, peer), 2),
                     fmt(ratio(read, peer), 2)])
    head = ["kernel", "peregrine-graph, tmpfs members", "--memory 0", "gapbs, in memory", "peregrine / gapbs",
            "--memory 0 / gapbs"]
    text = (f"Kronecker scale {scale(ctx)} (peregrine-graph gen), the same graph for both; seconds "
            f"(median; BFS per search).\n\n" + md_table(head, rows))
    agree = ctx.extras.get("gap", {}).get("agreement")
    if agree:
        text += ("\n\nThe same results (each kernel once more; gapbs's analysis of its run, -a, "
                 "against peregrine-graph's report or --out):\n\n" + agreement_table(agree, md_table))
    return text


CASE = Case("gap", "GAP kernels against gapbs", run, report, steps=lambda ctx: 2 + ctx.rounds(), in_default=False)
