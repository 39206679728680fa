// Internal to import: the id map (ids.u64, the sorted distinct ids) cut
// into slices of consecutive vertices, each small enough to be held
// within import's share of the memory budget. Slice p
// holds vertices [p * slice_ids, ...); part_of(id) names the slice an id
// must be in, by binary search over the slices' first ids (a few KiB).
// Thread rules: immutable once built; any number of threads may read it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph::detail {

class IdSlices {
 public:
  // Reads the first id of every slice of `slice_ids` vertices from the
  // ids file of n sorted ids.
  static Expected<IdSlices> open(const std::filesystem::path& ids_file, uint64_t n, uint64_t slice_ids);

  size_t parts() const { return first_ids_.size(); }
  uint64_t slice_ids() const { return slice_ids_; }
  uint64_t first_vertex(size_t p) const { return p * slice_ids_; }
  uint64_t count(size_t p) const { return std::min(slice_ids_, n_ - first_vertex(p)); }
  // The slice whose ids range covers `id` (slice 0 for ids below all).
  size_t part_of(uint64_t id) const;
  // The ids of slice p, ascending: the k-th is vertex first_vertex(p) + k.
  Expected<std::vector<uint64_t>> read(size_t p) const;

 private:
  std::filesystem::path path_;
  uint64_t n_ = 0;
  uint64_t slice_ids_ = 0;
  std::vector<uint64_t> first_ids_;
};

// Reads count ids from the ids file, starting at vertex `first`.
Expected<std::vector<uint64_t>> read_ids(const std::filesystem::path& ids_file, uint64_t first, uint64_t count);

}  // namespace peregrine::graph::detail
