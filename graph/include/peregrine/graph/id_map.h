// The user's vertex ids of a graph: vertex v (0..n-1 inside peregrine-graph)
// is ids[v] to the user. An imported graph keeps them, ascending, in
// ids.u64; a generated graph has none (vertex v is v). find() maps a user
// id back: by subtraction when the ids are contiguous, through a lookup
// table when their range is small enough, else by binary search within a
// bucket of ids sharing their high bits (one bucket per vertex or so, so
// ids scattered over 64 bits cost a probe or two, not log2(n) cache misses).
// Thread rules: immutable once built; any number of threads may read it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "peregrine/graph/csr_format.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

class IdMap {
 public:
  // Vertex v is user id v.
  static IdMap identity(uint64_t n) { return IdMap(n, 0); }
  // Vertex v is user id base + v.
  static IdMap range(uint64_t base, uint64_t n) { return IdMap(n, base); }
  // REQUIRES: ids strictly ascending. A lookup table of 4 bytes per id in
  // [ids.front(), ids.back()] is built if it fits table_budget_bytes, else
  // a bucket index of 4-8 bytes per id, or fewer buckets (several ids
  // each) to fit the budget.
  static IdMap sorted(std::vector<uint64_t> ids, uint64_t table_budget_bytes = 0);
  // The map of an opened graph: ids.u64 if graph.meta names one, else identity.
  static Expected<IdMap> load(const Graph& graph);

  uint64_t size() const { return n_; }
  uint64_t lookup_bytes() const { return (table_.size() + buckets_.size()) * sizeof(uint32_t); }
  // Everything the map holds: the ids (none if contiguous) and the lookup.
  uint64_t memory_bytes() const { return ids_.capacity() * sizeof(uint64_t) + lookup_bytes(); }
  uint64_t user_id(uint64_t v) const { return ids_.empty() ? base_ + v : ids_[v]; }
  std::optional<Vertex> find(uint64_t user_id) const;
  // A hint that find(user_id) follows soon: starts loading the table or
  // bucket entry it will read, so a loop over many ids overlaps the misses.
  void prefetch(uint64_t user_id) const {
    const uint64_t off = user_id - base_;
    if (!table_.empty()) {
      if (off < table_.size()) __builtin_prefetch(&table_[off]);
    } else if (!buckets_.empty() && user_id >= base_ && (off >> bucket_shift_) + 1 < buckets_.size()) {
      __builtin_prefetch(&buckets_[off >> bucket_shift_]);
    }
  }

 private:
  IdMap(uint64_t n, uint64_t base) : n_(n), base_(base) {}
  uint64_t n_;
  uint64_t base_;
  std::vector<uint64_t> ids_;    // empty: contiguous from base_
  std::vector<uint32_t> table_;  // optional: user id - base_ -> vertex, or kNone
  // optional: ids whose (id - base_) >> bucket_shift_ is b are ids_[buckets_[b], buckets_[b+1])
  std::vector<uint32_t> buckets_;
  unsigned bucket_shift_ = 0;
  static constexpr uint32_t kNone = UINT32_MAX;
};

// The user's id of one vertex, read from ids.u64 alone (v itself for a
// graph without an id map).
Expected<uint64_t> read_user_id(const Graph& graph, uint64_t v);

}  // namespace peregrine::graph
