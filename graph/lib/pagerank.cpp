#include "peregrine/graph/pagerank.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "thread_team.h"

namespace peregrine::graph {

namespace {
// Vertices a block of the per-vertex passes covers, and the unit the team
// hands out (one block a grab): small enough that a skewed graph's heavy
// blocks spread over the threads, large enough that a grab is worth it.
constexpr uint64_t kBlock = 256;
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
  if (Status st = pull.keep_if_fits(); !st) return st;
  detail::ThreadTeam team(pull.kept() ? detail::resolve_threads(o.threads) : 1);
  // Sums over vertices are taken a block at a time, each block's partial
  // sum added in block order, so the totals do not depend on the thread
  // count or on which path gathers.
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
  std::vector<double> partial_held(blocks);
  auto in_block_order = [](const std::vector<double>& p) {
    double total = 0;
    for (double x : p) total += x;
    return total;
  };
  // What v sends along each out-edge; a vertex without any holds its rank
  // back for everyone (returned).
  auto spread = [&](uint64_t v, double rank_v, std::vector<double>& out) {
    const uint64_t d = graph.degree(v);
    out[v] = d == 0 ? 0 : rank_v / static_cast<double>(d);
    return d == 0 ? rank_v : 0.0;
  };
  auto spread_all = [&] {
    team.for_each(
        blocks,
        [&](size_t b, uint32_t) {
          double held = 0;
          for (uint64_t v = b * kBlock, end = std::min<uint64_t>(n, v + kBlock); v < end; ++v)
            held += spread(v, r.rank[v], contrib);
          partial_held[b] = held;
        },
        1);
    return in_block_order(partial_held);
  };
  // The kept path gathers, measures the change and spreads the new rank in
  // one pass over each block, while the block's ranks are in the cache.
  // Other blocks still gather the old contributions meanwhile, so the new
  // ones go to a second array; a block's ranks are its own, so they are
  // replaced in place. The file path gathers into `next` as the reads
  // complete and takes the passes after.
  std::vector<double> next_contrib(pull.kept() ? n : 0);
  std::vector<double> next(pull.kept() ? 0 : n);
  double dangling = spread_all();
  while (r.iterations < o.max_iterations) {
    const double base = (1.0 - o.damping) / dn + o.damping * dangling / dn;
    double delta = 0;
    if (pull.kept()) {
      team.for_each(
          blocks,
          [&](size_t b, uint32_t) {
            double change = 0;
            double held = 0;
            for (uint64_t v = b * kBlock, end = std::min<uint64_t>(n, v + kBlock); v < end; ++v) {
              double sum = 0;
              for (Vertex u : pull.kept_list(static_cast<Vertex>(v))) sum += contrib[u];
              const double rank_v = base + o.damping * sum;
              change += std::fabs(rank_v - r.rank[v]);
              r.rank[v] = rank_v;
              held += spread(v, rank_v, next_contrib);
            }
            partial[b] = change;
            partial_held[b] = held;
          },
          1);
      delta = in_block_order(partial);
      dangling = in_block_order(partial_held);
      contrib.swap(next_contrib);
    } else {
      // Vertices without in-neighbours get no call: base alone.
      std::fill(next.begin(), next.end(), base);
      Status st = pull.read_all([&](Vertex v, std::span<const Vertex> nbrs) {
        double sum = 0;
        for (Vertex u : nbrs) sum += contrib[u];
        next[v] += o.damping * sum;
      });
      if (!st) return st;
      team.for_each(
          blocks,
          [&](size_t b, uint32_t) {
            double change = 0;
            for (uint64_t v = b * kBlock, end = std::min<uint64_t>(n, v + kBlock); v < end; ++v)
              change += std::fabs(next[v] - r.rank[v]);
            partial[b] = change;
          },
          1);
      delta = in_block_order(partial);
      r.rank.swap(next);
    }
    ++r.iterations;
    r.last_delta = delta;
    if (delta < o.epsilon || r.iterations == o.max_iterations) break;
    if (!pull.kept()) dangling = spread_all();
  }
  return r;
}

}  // namespace peregrine::graph
