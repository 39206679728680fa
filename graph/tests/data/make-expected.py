#!/usr/bin/env python3
"""Writes the test graphs of graph/tests/data and their expected per-vertex
results, computed with networkx (an implementation independent of
peregrine-graph). Run ONCE by hand; the tests only read the files written
here and never need networkx. Run with networkx 3.6.1 (Debian
python3-networkx), pure-Python code paths (no scipy):

    cd graph/tests/data && python3 make-expected.py

Graphs (edge lists in the user's ids, as `peregrine-graph import` reads them):
  path.txt     undirected path 100-200-...-900, sparse ids, comments
  star.txt     undirected star, centre 0, leaves 1..8; a self-loop line
               (5 5) and duplicates (0 1, 1 0) that import must drop and count
  karate.txt   Zachary's karate club (34 members, 78 edges, ids 1..34 as
               in Zachary 1977), SNAP-style with a weight column
  karate.mtx   the same graph as Matrix Market coordinate pattern symmetric
  dcycle.txt   directed: cycle 1->2->3->4->5->1, chord 1->3, 6->1 (6 has
               no in-arcs), 3->7 (7 is a sink: dangling for PageRank)
  roads.gr     DIMACS shortest-path graph (9th DIMACS challenge): 12
               vertices, 2 of them without arcs, a grid of two-way roads
               whose two directions differ in weight, a one-way road and a
               duplicate arc (import keeps the smaller weight)

Expected files, one line per vertex, ascending id:
  NAME.bfs       vertex depth   (BFS from the first vertex of the graph's
                                 ROOTS entry; -1 = not reached)
  NAME.sssp      vertex distance (Dijkstra from the ROOTS vertex, every edge
                                 weighing 1 as the graph format holds no
                                 weights yet; -1 = not reached)
  NAME.cc        vertex label   (smallest id of its (weakly) connected component)
  NAME.kcore     vertex core    (undirected graphs only)
  NAME.tc        vertex triangles (triangles at the vertex; undirected only)
  NAME.bc        vertex score   (betweenness from the ROOTS vertex alone,
                                 unnormalised, every ordered pair counted:
                                 networkx's subset betweenness halves it on
                                 an undirected graph, so it is doubled back)
  NAME.pagerank  vertex rank    (alpha 0.85, converged to tol 1e-15)
  karate.wsssp   vertex distance (Dijkstra from vertex 1 over the weight
                                 column: import --weighted)
  roads.wsssp    vertex distance (Dijkstra from vertex 1 over the arcs'
                                 weights, directed; -1 = not reached)
"""
import networkx as nx
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

ROOTS = {"path": 300, "star": 3, "karate": 1, "dcycle": 1}


def write_lines(path, lines):
    with open(path, "w") as f:
        for line in lines:
            f.write(line + "\n")


def graphs():
    path_ids = [100 * i for i in range(1, 10)]
    path = ["# an undirected path with sparse ids", "% percent comments too"]
    path += [f"{a} {b}" for a, b in zip(path_ids, path_ids[1:])]
    star = ["# star: centre 0"] + [f"0 {i}" for i in range(1, 9)] + ["5 5", "0 1", "1 0"]
    k = nx.karate_club_graph()
    karate = ["# Zachary's karate club, members 1..34; third column: interaction count (ignored)"]
    karate += [f"{u + 1}\t{v + 1}\t{d.get('weight', 1)}" for u, v, d in sorted(k.edges(data=True))]
    mtx = ["%%MatrixMarket matrix coordinate pattern symmetric", "% Zachary's karate club",
           f"34 34 {k.number_of_edges()}"]
    # Symmetric Matrix Market stores the lower triangle: row >= column.
    mtx += [f"{max(u, v) + 1} {min(u, v) + 1}" for u, v in sorted(k.edges())]
    dcycle = ["# directed cycle 1..5 with a chord, a source (6) and a sink (7)",
              "1 2", "2 3", "3 4", "4 5", "5 1", "1 3", "6 1", "3 7"]
    return {"path": (path, False), "star": (star, False), "karate": (karate, False),
            "dcycle": (dcycle, True)}, mtx


def read_graph(lines, directed):
    g = nx.DiGraph() if directed else nx.Graph()
    for line in lines:
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        u, v = (int(x) for x in s.split()[:2])
        g.add_edge(u, v)  # the vertex exists even for a self-loop...
    g.remove_edges_from(list(nx.selfloop_edges(g)))  # ...the loop does not
    return g


def main():
    gs, mtx = graphs()
    write_lines("karate.mtx", mtx)
    for name, (lines, directed) in gs.items():
        write_lines(f"{name}.txt", lines)
        g = read_graph(lines, directed)
        nodes = sorted(g.nodes())
        depth = nx.single_source_shortest_path_length(g, ROOTS[name])
        write_lines(f"{name}.bfs", [f"{v} {depth.get(v, -1)}" for v in nodes])
        dist = nx.single_source_dijkstra_path_length(g, ROOTS[name], weight=lambda u, v, d: 1)
        write_lines(f"{name}.sssp", [f"{v} {dist.get(v, -1)}" for v in nodes])
        comps = nx.weakly_connected_components(g) if directed else nx.connected_components(g)
        label = {v: min(c) for c in comps for v in c}
        write_lines(f"{name}.cc", [f"{v} {label[v]}" for v in nodes])
        if not directed:
            core = nx.core_number(g)
            write_lines(f"{name}.kcore", [f"{v} {core[v]}" for v in nodes])
            tri = nx.triangles(g)
            write_lines(f"{name}.tc", [f"{v} {tri[v]}" for v in nodes])
        bc = nx.betweenness_centrality_subset(g, sources=[ROOTS[name]], targets=list(g), normalized=False)
        twice = 1 if directed else 2
        write_lines(f"{name}.bc", [f"{v} {twice * bc[v]:.17g}" for v in nodes])
        rank = _pagerank_python(g, alpha=0.85, max_iter=100000, tol=1e-15)
        write_lines(f"{name}.pagerank", [f"{v} {rank[v]:.17g}" for v in nodes])


def roads():
    arcs = []
    for r in range(2):
        for c in range(5):
            v = 1 + r * 5 + c
            if c < 4:
                arcs += [(v, v + 1, 3 + c), (v + 1, v, 10 + c)]
            if r == 0:
                arcs += [(v, v + 5, 2 * c + 1), (v + 5, v, 4)]
    arcs.append((10, 1, 1))   # one way back to the start
    arcs.append((1, 2, 9))    # a duplicate of 1 -> 2 (3): the smaller stays
    lines = ["c roads.gr: a 2 x 5 grid of two-way roads, vertices 11 and 12 without arcs",
             f"p sp 12 {len(arcs)}"] + [f"a {u} {v} {w}" for u, v, w in arcs]
    g = nx.DiGraph()
    g.add_nodes_from(range(1, 13))
    for u, v, w in arcs:
        if not g.has_edge(u, v) or w < g[u][v]["weight"]:
            g.add_edge(u, v, weight=w)
    return lines, g


def weighted_results():
    lines, g = roads()
    write_lines("roads.gr", lines)
    dist = nx.single_source_dijkstra_path_length(g, 1)
    write_lines("roads.wsssp", [f"{v} {dist.get(v, -1)}" for v in sorted(g.nodes())])
    k = nx.Graph()
    for u, v, d in nx.karate_club_graph().edges(data=True):
        k.add_edge(u + 1, v + 1, weight=d.get("weight", 1))
    dist = nx.single_source_dijkstra_path_length(k, 1)
    write_lines("karate.wsssp", [f"{v} {dist[v]}" for v in sorted(k.nodes())])


if __name__ == "__main__":
    main()
    weighted_results()
