#include "peregrine/graph/pagerank.h"

#include <cerrno>
#include <cmath>

#include "thread_team.h"

namespace peregrine::graph {

Expected<PagerankResult> run_pagerank(const Graph& graph, AdjacencyReader& reader, const PagerankOptions& o,
                                      AdjacencyReader* in_reader) {
  if (graph.directed() && in_reader == nullptr)
    return Status::error(EINVAL, "PageRank on a directed graph needs the reader of its in-lists");
  AdjacencyReader& pull = in_reader ? *in_reader : reader;
  if (!(o.damping >= 0 && o.damping < 1)) return Status::error(EINVAL, "damping must be in [0, 1)");
  if (o.max_iterations < 1) return Status::error(EINVAL, "iterations must be at least 1");
  const uint64_t n = graph.num_vertices();
  const double dn = static_cast<double>(n);
  PagerankResult r;
  r.rank.assign(n, 1.0 / dn);
  std::vector<double> contrib(n);
  std::vector<double> next(n);
  if (Status st = pull.keep_if_fits(); !st) return st;
  detail::ThreadTeam team(pull.kept() ? detail::resolve_threads(o.threads) : 1);
  while (r.iterations < o.max_iterations) {
    double dangling = 0;
    for (uint64_t v = 0; v < n; ++v) {
      uint64_t d = graph.degree(v);
      if (d == 0) {
        dangling += r.rank[v];
        contrib[v] = 0;
      } else {
        contrib[v] = r.rank[v] / static_cast<double>(d);
      }
    }
    const double base = (1.0 - o.damping) / dn + o.damping * dangling / dn;
    std::fill(next.begin(), next.end(), base);
    if (pull.kept()) {
      team.for_each(n, [&](size_t v, uint32_t) {
        double sum = 0;
        for (Vertex u : pull.kept_list(static_cast<Vertex>(v))) sum += contrib[u];
        next[v] += o.damping * sum;
      });
    } else {
      Status st = pull.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
        double sum = 0;
        for (Vertex u : nbrs) sum += contrib[u];
        next[v] += o.damping * sum;
      });
      if (!st) return st;
    }
    double delta = 0;
    for (uint64_t v = 0; v < n; ++v) delta += std::fabs(next[v] - r.rank[v]);
    r.rank.swap(next);
    ++r.iterations;
    r.last_delta = delta;
    if (delta < o.epsilon) break;
  }
  return r;
}

}  // namespace peregrine::graph
