#include "peregrine/graph/reference.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

namespace peregrine::graph {
namespace {

// Union-find with union by size and path halving.
class DisjointSets {
 public:
  explicit DisjointSets(uint64_t n) : parent_(n), size_(n, 1) { std::iota(parent_.begin(), parent_.end(), 0); }
  uint64_t find(uint64_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void unite(uint64_t a, uint64_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
  }

 private:
  std::vector<uint64_t> parent_;
  std::vector<uint64_t> size_;
};

}  // namespace

std::vector<Vertex> reference_components(const MemoryGraph& g) {
  const uint64_t n = g.num_vertices();
  DisjointSets ds(n);
  for (uint64_t u = 0; u < n; ++u)
    for (Vertex v : g.neighbours(u)) ds.unite(u, v);
  std::vector<Vertex> min_of_root(n, ~Vertex{0});
  for (uint64_t v = 0; v < n; ++v) {
    uint64_t r = ds.find(v);
    min_of_root[r] = std::min(min_of_root[r], static_cast<Vertex>(v));
  }
  std::vector<Vertex> label(n);
  for (uint64_t v = 0; v < n; ++v) label[v] = min_of_root[ds.find(v)];
  return label;
}

std::vector<uint32_t> reference_core_numbers(const MemoryGraph& g) {
  // Batagelj & Zaversnik (2003): vertices kept sorted by current degree in
  // buckets; always remove a vertex of minimum degree.
  const uint64_t n = g.num_vertices();
  std::vector<uint32_t> deg(n);
  uint32_t md = 0;
  for (uint64_t v = 0; v < n; ++v) {
    deg[v] = static_cast<uint32_t>(g.neighbours(v).size());
    md = std::max(md, deg[v]);
  }
  std::vector<uint64_t> bin(md + 1, 0);
  for (uint64_t v = 0; v < n; ++v) ++bin[deg[v]];
  uint64_t start = 0;
  for (uint32_t d = 0; d <= md; ++d) {
    uint64_t num = bin[d];
    bin[d] = start;
    start += num;
  }
  std::vector<uint64_t> pos(n), vert(n);
  for (uint64_t v = 0; v < n; ++v) {
    pos[v] = bin[deg[v]];
    vert[pos[v]] = v;
    ++bin[deg[v]];
  }
  for (uint32_t d = md; d >= 1; --d) bin[d] = bin[d - 1];
  bin[0] = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v = vert[i];
    for (Vertex u : g.neighbours(v)) {
      if (deg[u] > deg[v]) {
        uint32_t du = deg[u];
        uint64_t pu = pos[u];
        uint64_t pw = bin[du];
        uint64_t w = vert[pw];
        if (u != w) {
          pos[u] = pw;
          vert[pu] = w;
          pos[w] = pu;
          vert[pw] = u;
        }
        ++bin[du];
        --deg[u];
      }
    }
  }
  return deg;
}

std::vector<double> reference_pagerank(const MemoryGraph& g, double damping, uint32_t iterations) {
  const uint64_t n = g.num_vertices();
  const double dn = static_cast<double>(n);
  std::vector<double> rank(n, 1.0 / dn), next(n);
  for (uint32_t it = 0; it < iterations; ++it) {
    double dangling = 0;
    for (uint64_t v = 0; v < n; ++v)
      if (g.neighbours(v).empty()) dangling += rank[v];
    const double base = (1.0 - damping) / dn + damping * dangling / dn;
    // Push along out-lists (the implementation under test pulls over
    // in-lists), so directed graphs need no transpose here.
    std::fill(next.begin(), next.end(), base);
    for (uint64_t u = 0; u < n; ++u) {
      auto out = g.neighbours(u);
      if (out.empty()) continue;
      const double share = damping * rank[u] / static_cast<double>(out.size());
      for (Vertex v : out) next[v] += share;
    }
    rank.swap(next);
  }
  return rank;
}

std::vector<int64_t> reference_bfs_levels(const MemoryGraph& g, uint64_t root) {
  std::vector<int64_t> level(g.num_vertices(), -1);
  std::vector<uint64_t> queue{root};
  level[root] = 0;
  for (size_t i = 0; i < queue.size(); ++i) {
    uint64_t v = queue[i];
    for (Vertex w : g.neighbours(v)) {
      if (level[w] < 0) {
        level[w] = level[v] + 1;
        queue.push_back(w);
      }
    }
  }
  return level;
}

std::vector<int64_t> reference_sssp(const MemoryGraph& g, uint64_t root) {
  std::vector<int64_t> dist(g.num_vertices(), -1);
  using Entry = std::pair<uint64_t, uint64_t>;  // distance, vertex
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<bool> done(g.num_vertices(), false);
  dist[root] = 0;
  heap.push({0, root});
  while (!heap.empty()) {
    const auto [d, v] = heap.top();
    heap.pop();
    if (done[v]) continue;
    done[v] = true;
    const auto nbrs = g.neighbours(v);
    for (size_t i = 0; i < nbrs.size(); ++i) {
      const Vertex w = nbrs[i];
      const uint64_t dw = d + (g.weighted() ? g.weights_of(v)[i] : 1);
      if (dist[w] < 0 || dw < static_cast<uint64_t>(dist[w])) {
        dist[w] = static_cast<int64_t>(dw);
        heap.push({dw, w});
      }
    }
  }
  return dist;
}

std::vector<uint64_t> reference_triangles(const MemoryGraph& g) {
  // Node iterator in id order: u < v < w, the closing edge u-w looked up.
  const uint64_t n = g.num_vertices();
  std::vector<uint64_t> at(n, 0);
  for (uint64_t u = 0; u < n; ++u) {
    for (Vertex v : g.neighbours(u)) {
      if (v <= u) continue;
      for (Vertex w : g.neighbours(v)) {
        if (w <= v || !g.has_edge(u, w)) continue;
        ++at[u];
        ++at[v];
        ++at[w];
      }
    }
  }
  return at;
}

std::vector<double> reference_bc(const MemoryGraph& g, const std::vector<Vertex>& sources) {
  // Brandes (2001) as published: a FIFO BFS with predecessor lists and a
  // stack of the visit order, dependencies pushed to the predecessors.
  const uint64_t n = g.num_vertices();
  std::vector<double> score(n, 0.0);
  for (Vertex s : sources) {
    std::vector<std::vector<Vertex>> pred(n);
    std::vector<double> sigma(n, 0.0), delta(n, 0.0);
    std::vector<int64_t> dist(n, -1);
    std::vector<Vertex> stack, queue{s};
    sigma[s] = 1;
    dist[s] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      const Vertex v = queue[head];
      stack.push_back(v);
      for (Vertex w : g.neighbours(v)) {
        if (dist[w] < 0) {
          dist[w] = dist[v] + 1;
          queue.push_back(w);
        }
        if (dist[w] == dist[v] + 1) {
          sigma[w] += sigma[v];
          pred[w].push_back(v);
        }
      }
    }
    while (!stack.empty()) {
      const Vertex w = stack.back();
      stack.pop_back();
      for (Vertex v : pred[w]) delta[v] += sigma[v] / sigma[w] * (1 + delta[w]);
      if (w != s) score[w] += delta[w];
    }
  }
  return score;
}

}  // namespace peregrine::graph
