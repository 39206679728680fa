#include "slice_join.h"

#include <algorithm>
#include <boost/sort/spreadsort/integer_sort.hpp>

#include "two_halves.h"

namespace peregrine::graph::detail {
namespace {

// The join of one sorted half: a cursor moves up the ids, galloping (1, 2,
// 4, ... ahead, then a binary search over the last step) so that a batch
// much smaller than the slice skips the ids between its records. Returns
// the index of the first record whose id is missing, or recs.size().
size_t join_sorted(std::span<InputEdge> recs, std::span<const uint64_t> ids, uint64_t first_vertex,
                   const IdSlices* route) {
  const size_t n = ids.size();
  size_t j = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    const uint64_t id = recs[i].u;
    if (j < n && ids[j] < id) {
      size_t lo = j, step = 1, hi = j + 1;  // ids[lo] < id
      while (hi < n && ids[hi] < id) {
        lo = hi;
        step *= 2;
        hi = j + step;
      }
      hi = std::min(hi, n);
      j = static_cast<size_t>(
          std::lower_bound(ids.begin() + static_cast<ptrdiff_t>(lo) + 1, ids.begin() + static_cast<ptrdiff_t>(hi), id) -
          ids.begin());
    }
    if (j == n || ids[j] != id) return i;
    const uint64_t high = route != nullptr ? static_cast<uint64_t>(route->part_of(recs[i].v)) << 32 : 0;
    recs[i].u = high | (first_vertex + j);
  }
  return recs.size();
}

}  // namespace

std::optional<uint64_t> map_batch_to_slice(std::span<InputEdge> recs, std::span<const uint64_t> ids,
                                           uint64_t first_vertex, const IdSlices* route, bool two_threads) {
  size_t bad[2] = {0, 0};
  bool failed[2] = {false, false};
  const size_t mid = for_two_halves(recs, two_threads, [&](std::span<InputEdge> half, int h) {
    boost::sort::spreadsort::integer_sort(
        half.begin(), half.end(), [](const InputEdge& e, unsigned offset) { return e.u >> offset; },
        [](const InputEdge& a, const InputEdge& b) { return a.u < b.u; });
    bad[h] = join_sorted(half, ids, first_vertex, route);
    failed[h] = bad[h] < half.size();
  });
  if (failed[0]) return recs[bad[0]].u;
  if (failed[1]) return recs[mid + bad[1]].u;
  return std::nullopt;
}

}  // namespace peregrine::graph::detail
