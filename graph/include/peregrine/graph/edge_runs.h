// External sort of directed edges, the generator's bounded-memory core.
//
// An edge u->v is packed as the key (u << 32) | v, so sorting keys sorts by
// source, then neighbour: exactly CSR order. write_run() sorts one
// memory-sized batch, drops duplicates and writes it as a run file; merge()
// streams the k-way merge of all runs, again without duplicates, to a sink
// in batches. Memory: the caller's batch plus one read buffer per run during
// the merge. The keys may be anything 64-bit (import sorts the user's vertex
// ids with it too). A batch is sorted as two halves on two threads (the
// caller's and one that write_run() and merge() start and join) and the
// halves merged as they are written.
//
// The records are the keys themselves (EdgeRuns), or a key with its edge's
// weight (WeightedEdgeRuns, a weighted import): sorted by key, then
// weight, and a key given more than once keeps its smallest weight (the
// shortest of parallel edges, as a shortest-path kernel would take).
//
// Thread rules: owned by one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph {

inline uint64_t pack_edge(uint64_t u, uint64_t v) { return (u << 32) | v; }
inline uint32_t edge_source(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
inline uint32_t edge_target(uint64_t key) { return static_cast<uint32_t>(key); }

// An edge key and its weight, as a weighted import sorts them.
struct WeightedKey {
  uint64_t key;
  uint32_t weight;
  uint32_t unused = 0;  // written as is: the run files hold no uninitialised bytes
};

inline uint64_t record_key(uint64_t key) { return key; }
inline uint64_t record_key(const WeightedKey& r) { return r.key; }

template <class Record>
class SortedRuns {
 public:
  // Run files go to DIR (created; removed with its runs by remove()).
  // sync_runs fsyncs each run as it is written; two_threads false sorts
  // on the calling thread alone (--threads 1).
  explicit SortedRuns(std::filesystem::path dir, bool sync_runs = true, bool two_threads = true)
      : dir_(std::move(dir)), sync_(sync_runs), two_threads_(two_threads) {}
  SortedRuns(const SortedRuns&) = delete;
  SortedRuns& operator=(const SortedRuns&) = delete;
  ~SortedRuns() { remove(); }

  // Sorts `records`, removes duplicate keys and keys equal to `drop` (if
  // given: it must be the largest possible key), writes a run.
  Status write_run(std::vector<Record>& records, std::optional<uint64_t> drop = std::nullopt);

  // Calls sink with ascending, globally unique keys, in batches. Each run
  // file's space is given back (hole punching) as it is read, so the runs
  // can be merged once only. A `tail`
  // batch (the last one, still in memory) is sorted, deduplicated and
  // `drop`ped as write_run() would, then merged from memory instead of
  // being written and read back: with everything in one batch, no run file
  // is written at all.
  Status merge(const std::function<Status(std::span<const Record>)>& sink,
               const std::function<void(uint64_t done, uint64_t total)>& progress = {},
               std::vector<Record>* tail = nullptr, std::optional<uint64_t> drop = std::nullopt) const;

  size_t run_count() const { return runs_.size(); }
  uint64_t total_keys() const { return total_keys_; }
  void remove();

 private:
  struct Run {
    std::filesystem::path path;
    uint64_t keys;
  };
  std::filesystem::path dir_;
  bool sync_;
  bool two_threads_;
  std::vector<Run> runs_;
  uint64_t total_keys_ = 0;
};

using EdgeRuns = SortedRuns<uint64_t>;
using WeightedEdgeRuns = SortedRuns<WeightedKey>;
extern template class SortedRuns<uint64_t>;
extern template class SortedRuns<WeightedKey>;

}  // namespace peregrine::graph
