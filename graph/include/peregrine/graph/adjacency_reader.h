// The semi-external IO path: reads adjacency lists from adjacency.u32 with
// O_DIRECT through one io_uring, for a batch of vertices at a time.
//
// read_lists() takes a whole frontier, sorts it by vertex (= by file
// offset), and walks it building extents: nearby lists (gap at most
// coalesce_gap_bytes) share one 4 KiB-aligned read of at most max_io_bytes;
// a list longer than that is split over several reads. Up to queue_depth
// reads are in flight at once. As each read completes, the callback runs for
// every list piece in it, so a vertex's neighbours may arrive in several
// calls; algorithms must treat each call as a subset. The pieces of one
// list arrive in list order: a read that goes on with a list is held until
// the read before it has been delivered (reads of different lists complete
// in any order, on a striped volume above all).
//
// On a weighted graph opened with `weights`, each read of adjacency.u32
// is paired with the read of the same range of weights.u32 (same layout,
// an entry's weight at its entry's offset), and the weighted calls hand
// each piece's weights beside its neighbours once both reads are in.
//
// The slot buffers and the files are registered with the ring when the
// kernel allows it.
//
// Lists kept in memory: when options.keep_bytes allows the whole file
// (and the weights, when read), the first read_lists()/read_all(), or
// keep_if_fits(), reads it once in long sequential reads at full queue
// depth, checks every neighbour id, and every later call is served from
// memory. An algorithm that passes over the lists many times (PageRank,
// BFS from several roots) then pays the drives once, and may compute on
// several threads over kept_list(). That is the page cache an O_DIRECT
// reader gives up, taken back under an explicit budget.
//
// Thread rules: the thread that calls read_lists()/read_all() is the one IO
// thread. It owns the ring, submits, reaps and runs the callbacks between
// completions while the other reads stay in flight. An AdjacencyReader is
// not shareable between threads. Neighbour ids are range-checked before a
// callback sees them, so a corrupt file gives an error, not a wild write.
// Once kept, the lists are immutable: kept_list() and kept_weights() may
// be read from any number of threads while the IO thread waits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "peregrine/graph/csr_format.h"
#include "peregrine/util/result.h"

namespace peregrine::graph {

struct ReaderOptions {
  unsigned queue_depth = 64;
  uint32_t max_io_bytes = 256 * 1024;       // multiple of 4096
  uint32_t coalesce_gap_bytes = 16 * 1024;  // read through gaps up to this size
  bool direct = true;                       // O_DIRECT; falls back if the filesystem refuses it
  bool weights = false;                     // also read weights.u32 (a weighted graph's out-lists)
  // Keep the lists in memory after one read when they (and the weights
  // read with them) take at most this many bytes; 0: read every pass from
  // the file (semi-external).
  uint64_t keep_bytes = 0;
};

struct IoStats {
  uint64_t reads = 0;       // read requests completed (each resubmission counts)
  uint64_t bytes = 0;       // bytes the reads returned
  uint64_t list_bytes = 0;  // of which the lists the algorithm asked for (and their weights, read with them)
};

using NeighbourFn = std::function<void(Vertex v, std::span<const Vertex> neighbours)>;
// weights[i] is the weight of the edge to neighbours[i].
using WeightedNeighbourFn =
    std::function<void(Vertex v, std::span<const Vertex> neighbours, std::span<const uint32_t> weights)>;

class AdjacencyReader {
 public:
  // Reads graph.adjacency_path(); `graph` must outlive the reader.
  static Expected<std::unique_ptr<AdjacencyReader>> open(const Graph& graph, const ReaderOptions& options);
  // What open() refuses in the options (queue depth, read size), so a
  // command line can report it as a usage error before opening anything.
  static Status check_options(const ReaderOptions& options);
  ~AdjacencyReader();
  AdjacencyReader(const AdjacencyReader&) = delete;
  AdjacencyReader& operator=(const AdjacencyReader&) = delete;

  // Sorts and deduplicates `vertices` in place, then delivers their lists.
  Status read_lists(std::vector<Vertex>& vertices, const NeighbourFn& fn);
  // Delivers every non-empty list in vertex order: one sequential sweep.
  Status read_all(const NeighbourFn& fn);
  // The same with the weights; REQUIRES: opened with options.weights.
  Status read_lists(std::vector<Vertex>& vertices, const WeightedNeighbourFn& fn);
  Status read_all(const WeightedNeighbourFn& fn);

  // Reads the lists into memory now if options.keep_bytes allows it
  // (once; later calls return at once), so that the first pass of an
  // algorithm can run from memory on several threads. Not fitting is not
  // an error: kept() stays false and the reader reads the file.
  Status keep_if_fits();
  bool kept() const { return kept_ready_; }
  // REQUIRES: kept(). A vertex's whole list, and its weights (opened with
  // options.weights).
  std::span<const Vertex> kept_list(Vertex v) const {
    return {kept_lists_ + graph_.offsets[v], graph_.offsets[v + 1] - graph_.offsets[v]};
  }
  std::span<const uint32_t> kept_weights(Vertex v) const {
    return {kept_weight_values_ + graph_.offsets[v], graph_.offsets[v + 1] - graph_.offsets[v]};
  }
  // Bytes the kept lists (and weights) take, or would take.
  uint64_t keep_size() const;

  const IoStats& stats() const { return stats_; }
  bool direct() const { return direct_; }
  bool reads_weights() const { return weights_fd_ >= 0; }

  class Source;  // a stream of vertices in ascending order (internal)

 private:
  struct Slot;
  AdjacencyReader(const Graph& graph, const ReaderOptions& options, int fd, bool direct);
  // Sorts and deduplicates a batch; an error for a vertex out of range.
  Status sort_batch(std::vector<Vertex>& vertices) const;
  // Exactly one of fn and wfn is set.
  Status run(Source& source, const NeighbourFn* fn, const WeightedNeighbourFn* wfn);
  // Reads `bytes` of the file (fixed file `index`) into `dest` from offset
  // 0, max_io_bytes at a time, queue_depth reads in flight, and checks
  // each read once the next are out: *first_bad becomes the index of the
  // first 32-bit entry not below `below` (left as it is when none is).
  Status load_file(int fd, unsigned index, std::byte* dest, uint64_t bytes, const std::string& path, uint64_t below,
                   uint64_t* first_bad);
  // Serves the lists of a batch (ascending, distinct), or every list, from
  // memory. REQUIRES: kept().
  void serve_kept(std::span<const Vertex> vertices, const NeighbourFn* fn, const WeightedNeighbourFn* wfn);
  void serve_all_kept(const NeighbourFn* fn, const WeightedNeighbourFn* wfn);

  const Graph& graph_;
  ReaderOptions options_;
  int fd_;
  int weights_fd_ = -1;
  bool direct_;
  IoStats stats_;
  struct Ring;
  std::unique_ptr<Ring> ring_;
  std::vector<std::unique_ptr<Slot>> slots_;
  // The kept lists and weights: AlignedBuffers, so O_DIRECT reads land in
  // them directly; kept_lists_/kept_weight_values_ point into them.
  bool keep_tried_ = false;
  bool kept_ready_ = false;
  struct KeptBuffers;
  std::unique_ptr<KeptBuffers> kept_buffers_;
  const Vertex* kept_lists_ = nullptr;
  const uint32_t* kept_weight_values_ = nullptr;
};

}  // namespace peregrine::graph
