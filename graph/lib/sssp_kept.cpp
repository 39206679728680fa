#include "sssp_kept.h"

#include <atomic>
#include <vector>

#include "thread_team.h"

namespace peregrine::graph::detail {

// From a distance in bucket c, at most c * delta + delta - 1, an edge of
// weight W reaches bucket c + (delta - 1 + W) / delta <= c + W / delta + 1:
// W / delta + 2 slots hold every bucket that can be filed.
uint64_t ring_slots(uint64_t max_weight, uint64_t delta) { return max_weight / delta + 2; }

namespace {
// Entries of a list between a prefetch of a neighbour's distance and its
// use (8 and 16 measured alike, both ahead of none).
constexpr size_t kPrefetchAhead = 16;
// Unused bins between two threads' rows, so that no cache line holds the
// vector headers of both (every push writes one): a line's worth, where
// padding every bin would cost a line a slot, 4 MiB a thread at 65,536.
constexpr uint64_t kRowGap = (64 + sizeof(std::vector<Vertex>) - 1) / sizeof(std::vector<Vertex>);
}  // namespace

void sssp_over_kept_lists(const AdjacencyReader& reader, bool weighted, uint64_t max_weight, uint32_t threads,
                          SsspResult& r) {
  const uint64_t delta = r.delta;
  const uint64_t slots = ring_slots(max_weight, delta);
  // bins[t * stride + i % slots]: vertices thread t filed in bucket i.
  const uint64_t stride = slots + kRowGap;
  std::vector<std::vector<Vertex>> bins(threads * stride);
  auto bin = [&](uint32_t t, uint64_t bucket) -> std::vector<Vertex>& { return bins[t * stride + bucket % slots]; };
  std::vector<Padded<uint64_t>> relaxed(threads);
  std::vector<uint64_t> in_round(r.distance.size(), 0);  // the last round that took the vertex
  bin(0, 0).push_back(r.root);
  std::vector<Vertex> round;
  ThreadTeam team(threads);
  uint64_t current = 0;
  while (true) {
    // The lowest bucket with filed vertices, at most slots - 1 ahead.
    uint64_t ahead = 0;
    auto filed = [&](uint64_t index) {
      for (uint32_t t = 0; t < threads; ++t)
        if (!bin(t, index).empty()) return true;
      return false;
    };
    while (ahead < slots && !filed(current + ahead)) ++ahead;
    if (ahead == slots) break;
    current += ahead;
    bool settled_any = false;
    while (true) {
      round.clear();
      ++r.rounds;
      for (uint32_t t = 0; t < threads; ++t) {
        auto& filed_now = bin(t, current);
        // A vertex lowered several times was filed each time: once a round.
        for (Vertex v : filed_now) {
          if (r.distance[v] / delta != current || in_round[v] == r.rounds) continue;
          in_round[v] = r.rounds;
          round.push_back(v);
        }
        filed_now.clear();
      }
      if (round.empty()) {
        --r.rounds;
        break;
      }
      settled_any = true;
      // By value: the compare-and-swap below would make the compiler load
      // them again for every entry.
      uint64_t* const distance = r.distance.data();
      team.for_each(round.size(), [&, distance, weighted](size_t i, uint32_t t) {
        const Vertex v = round[i];
        const uint64_t dv = std::atomic_ref<uint64_t>(distance[v]).load(std::memory_order_relaxed);
        const auto nbrs = reader.kept_list(v);
        const uint32_t* weights = weighted ? reader.kept_weights(v).data() : nullptr;
        const size_t n = nbrs.size();
        for (size_t k = 0; k < n; ++k) {
          // The distances a list names lie anywhere: ask for them ahead.
          if (k + kPrefetchAhead < n) __builtin_prefetch(distance + nbrs[k + kPrefetchAhead]);
          const Vertex w = nbrs[k];
          const uint64_t dw = dv + (weighted ? weights[k] : 1);
          std::atomic_ref<uint64_t> at(distance[w]);
          uint64_t seen = at.load(std::memory_order_relaxed);
          while (dw < seen) {
            if (at.compare_exchange_weak(seen, dw, std::memory_order_relaxed)) {
              ++relaxed[t].value;
              bin(t, dw / delta).push_back(w);
              break;
            }
          }
        }
      });
    }
    if (settled_any) ++r.buckets;
  }
  for (const auto& n : relaxed) r.relaxations += n.value;
}

}  // namespace peregrine::graph::detail
