#include "peregrine/graph/pagerank.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "thread_team.h"

namespace peregrine::graph {

namespace {
// Vertices a block of the per-vertex passes covers.
constexpr uint64_t kBlock = 1024;
}  // namespace

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
  // The per-vertex passes around the sums (contributions, dangling rank,
  // the change) run a block at a time on the team; each block's partial
  // sum is added in block order, so the totals do not depend on the thread
  // count either.
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
  auto sum_blocks = [&](const auto& block_sum) {
    team.for_each(blocks, [&](size_t b, uint32_t) {
      partial[b] = block_sum(b * kBlock, std::min<uint64_t>(n, (b + 1) * kBlock));
    });
    double total = 0;
    for (double p : partial) total += p;
    return total;
  };
  while (r.iterations < o.max_iterations) {
    const double dangling = sum_blocks([&](uint64_t from, uint64_t to) {
      double held = 0;
      for (uint64_t v = from; v < to; ++v) {
        const uint64_t d = graph.degree(v);
        if (d == 0) {
          held += r.rank[v];
          contrib[v] = 0;
        } else {
          contrib[v] = r.rank[v] / static_cast<double>(d);
        }
      }
      return held;
    });
    const double base = (1.0 - o.damping) / dn + o.damping * dangling / dn;
    if (pull.kept()) {
      team.for_each(n, [&](size_t v, uint32_t) {
        double sum = 0;
        for (Vertex u : pull.kept_list(static_cast<Vertex>(v))) sum += contrib[u];
        next[v] = base + o.damping * sum;
      });
    } else {
      // Vertices without in-neighbours get no call: base alone.
      std::fill(next.begin(), next.end(), base);
      Status st = pull.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
        double sum = 0;
        for (Vertex u : nbrs) sum += contrib[u];
        next[v] += o.damping * sum;
      });
      if (!st) return st;
    }
    const double delta = sum_blocks([&](uint64_t from, uint64_t to) {
      double change = 0;
      for (uint64_t v = from; v < to; ++v) change += std::fabs(next[v] - r.rank[v]);
      return change;
    });
    r.rank.swap(next);
    ++r.iterations;
    r.last_delta = delta;
    if (delta < o.epsilon) break;
  }
  return r;
}

}  // namespace peregrine::graph
