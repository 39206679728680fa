// The sliced import's join (slice_join.h): a batch of (id, payload)
// records is sorted by id and merge-joined with a slice's sorted ids, as
// two halves on two threads when it is large. Every id becomes
// first_vertex + its index, every payload stays with its record, and a
// missing id is named, in either half; also ids at the slice's two ends
// and the largest 64-bit id.
#include "slice_join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "two_halves.h"

namespace peregrine::graph::detail {
namespace {

constexpr uint64_t kFirstVertex = 1000;

// Sorted distinct ids scattered over 64 bits, with 0 and UINT64_MAX.
std::vector<uint64_t> slice_ids(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> ids{0, std::numeric_limits<uint64_t>::max()};
  while (ids.size() < n) ids.push_back(rng());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// `n` records over the ids (duplicates included, the two end ids always),
// each payload its record's number.
std::vector<InputEdge> records(const std::vector<uint64_t>& ids, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<InputEdge> recs;
  for (size_t i = 0; i < n; ++i) recs.push_back({ids[rng() % ids.size()], i});
  recs[0].u = ids.front();
  recs[n / 2].u = ids.back();
  return recs;
}

// The (vertex, payload) pairs the join must give, sorted.
std::vector<std::pair<uint64_t, uint64_t>> expected(const std::vector<uint64_t>& ids,
                                                    const std::vector<InputEdge>& recs) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const InputEdge& r : recs) {
    const auto at = std::lower_bound(ids.begin(), ids.end(), r.u) - ids.begin();
    out.emplace_back(kFirstVertex + static_cast<uint64_t>(at), r.v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> pairs_of(const std::vector<InputEdge>& recs) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const InputEdge& r : recs) out.emplace_back(r.u, r.v);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SliceJoin, EveryIdBecomesItsVertexAndKeepsItsPayload) {
  const auto ids = slice_ids(50000, 1);
  // Below the two-halves threshold, and above it with an odd size.
  for (size_t n : {size_t{1000}, kTwoHalvesMin * 2 + 1}) {
    for (bool two_threads : {false, true}) {
      auto recs = records(ids, n, n);
      const auto want = expected(ids, recs);
      EXPECT_EQ(map_batch_to_slice(recs, ids, kFirstVertex, nullptr, two_threads), std::nullopt);
      EXPECT_EQ(pairs_of(recs), want) << n << " records, two threads " << two_threads;
    }
  }
}

TEST(SliceJoin, AMissingIdIsNamedInEitherHalf) {
  const auto ids = slice_ids(50000, 2);
  const size_t n = kTwoHalvesMin * 2 + 1;
  // A small id and a large one, each in the first half's records only and
  // then in the second half's only (the halves split the batch at n / 2).
  for (uint64_t missing : {ids[10], ids[49990]}) {
    std::vector<uint64_t> without;
    for (uint64_t id : ids)
      if (id != missing) without.push_back(id);
    for (size_t at : {size_t{1}, n - 1}) {
      auto recs = records(without, n, 7);
      recs[at].u = missing;
      for (bool two_threads : {false, true}) {
        auto batch = recs;
        EXPECT_EQ(map_batch_to_slice(batch, without, kFirstVertex, nullptr, two_threads), missing)
            << "record " << at << ", two threads " << two_threads;
      }
    }
  }
}

TEST(SliceJoin, IdsBelowAndAboveTheSliceAreMissing) {
  const std::vector<uint64_t> ids{100, 200, 300};
  for (uint64_t outside : {uint64_t{99}, uint64_t{301}, uint64_t{150}, std::numeric_limits<uint64_t>::max()}) {
    std::vector<InputEdge> recs{{100, 1}, {outside, 2}, {300, 3}};
    EXPECT_EQ(map_batch_to_slice(recs, ids, kFirstVertex, nullptr, true), outside);
  }
  std::vector<InputEdge> ends{{300, 1}, {100, 2}, {300, 3}};
  EXPECT_EQ(map_batch_to_slice(ends, ids, kFirstVertex, nullptr, true), std::nullopt);
  EXPECT_EQ(pairs_of(ends), (std::vector<std::pair<uint64_t, uint64_t>>{
                                {kFirstVertex, 2}, {kFirstVertex + 2, 1}, {kFirstVertex + 2, 3}}));
}

}  // namespace
}  // namespace peregrine::graph::detail
