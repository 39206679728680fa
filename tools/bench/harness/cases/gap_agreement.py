"""The gap case's check that peregrine-graph and gapbs computed the same
thing on the same graph: each kernel once more on both, gapbs with its
analysis of the run (-a), compared with what peregrine-graph reports or
writes with --out. gapbs prints summaries, not per-vertex results, so the
check compares those: vertices reached by a BFS and an SSSP from the same
root, the number of components and the largest one, the triangle count,
and the five highest PageRank and betweenness vertices (gapbs's PageRank
spreads no rank from vertices without edges and keeps floats, so the
order of the top five is compared, not the values; gapbs's betweenness
is normalised to the highest and counts the source's own dependency,
which Brandes leaves out, so the source is dropped from gapbs's list and
both are normalised to their highest other vertex, within 1e-3)."""
import json
import os
import re
import subprocess


def _ours(ctx, kernel, graph, *opts, out=None):
    cmd = [ctx.bins.graph, kernel, "--graph", graph, "--json", *opts] + (["--out", out] if out else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def _theirs(gap, program, graph, *opts):
    return subprocess.run([os.path.join(gap, program), "-f", graph, "-n", "1", "-a", *opts], check=True,
                          capture_output=True, text=True).stdout


def _number(pattern, text):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"gapbs printed no match for {pattern!r}: " + text[-300:])
    return int(m.group(1))


def _top5(path, normalise=False):
    rows = [line.split() for line in open(path)]
    scores = [(float(s), int(v)) for v, s in rows]
    scores.sort(key=lambda x: (-x[0], x[1]))
    top = scores[:5]
    peak = top[0][0] if top and normalise else 1.0
    return [(v, s / peak) for s, v in top]


def _their_top5(text):
    # Lines "vertex:score" after the timing lines.
    return [(int(v), float(s)) for v, s in re.findall(r"^(\d+):([0-9.eE+-]+)$", text, re.M)][:5]


def agreement(ctx, gap, graph, sg, wsg, work):
    """Rows (kernel, what, peregrine-graph, gapbs, agree)."""
    rows = []
    bfs = _ours(ctx, "bfs", graph)
    root = str(bfs["root"])
    t = _theirs(gap, "bfs", sg, "-r", root)
    rows.append(("bfs", f"vertices reached from {root}", bfs["reached"], _number(r"BFS Tree has (\d+) nodes", t)))
    # gapbs prints no distances: peregrine-graph's are checked against
    # Dijkstra (--validate) and the row agrees only if they held.
    sssp = _ours(ctx, "sssp", graph, "--root", root, "--validate")
    t = _theirs(gap, "sssp", wsg, "-r", root, "-d", "2")
    reached = _number(r"SSSP Tree reaches (\d+) nodes", t)
    rows.append(("sssp", f"vertices reached from {root}; distances = Dijkstra's", sssp["reached"], reached,
                 sssp["reached"] == reached and sssp.get("validated") is True))
    cc = _ours(ctx, "cc", graph)
    t = _theirs(gap, "cc", sg)
    rows.append(("cc", "components", cc["components"], _number(r"There are (\d+) components", t)))
    rows.append(("cc", "largest component", cc["largest_component"],
                 _number(r"biggest clusters\s*\n\d+:(\d+)", t)))
    tc = _ours(ctx, "tc", graph)
    rows.append(("tc", "triangles", tc["triangles"], _number(r"(\d+) triangles", _theirs(gap, "tc", sg))))
    out = os.path.join(work, "pr.out")
    _ours(ctx, "pagerank", graph, "--iterations", "20", "--epsilon", "0", out=out)
    ours_top = [v for v, _ in _top5(out)]
    their_top = [v for v, _ in _their_top5(_theirs(gap, "pr", sg, "-i", "20", "-t", "0"))]
    rows.append(("pagerank", "top five vertices, in order", " ".join(map(str, ours_top)),
                 " ".join(map(str, their_top))))
    out = os.path.join(work, "bc.out")
    _ours(ctx, "bc", graph, "--root", root, "--roots", "1", out=out)
    their_bc = [(v, x) for v, x in _their_top5(_theirs(gap, "bc", sg, "-r", root, "-i", "1")) if v != int(root)]
    their_bc = [(v, x / their_bc[0][1]) for v, x in their_bc] if their_bc else []
    ours_bc = _top5(out, normalise=True)[:len(their_bc)]
    same = bool(their_bc) and [v for v, _ in ours_bc] == [v for v, _ in their_bc] and all(
        abs(a - b) <= 1e-3 for (_, a), (_, b) in zip(ours_bc, their_bc))
    rows.append(("bc", f"top five from {root}, normalised", " ".join(f"{v}:{s:.4f}" for v, s in ours_bc),
                 " ".join(f"{v}:{s:.4f}" for v, s in their_bc), same))
    return [r if len(r) == 5 else (*r, str(r[2]) == str(r[3])) for r in rows]


def agreement_table(rows, md_table):
    head = ["kernel", "compared", "peregrine-graph", "gapbs -a", "agree"]
    return md_table(head, [[k, what, str(a), str(b), "yes" if ok else "**no**"] for k, what, a, b, ok in rows])
