#include "peregrine/graph/importer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "edge_source.h"
#include "id_slices.h"
#include "peregrine/graph/csr_writer.h"
#include "peregrine/graph/edge_runs.h"
#include "peregrine/graph/file_writer.h"
#include "peregrine/graph/id_map.h"
#include "raw_edge_file.h"
#include "recent_ids.h"
#include "slice_join.h"

namespace peregrine::graph {
namespace {

using detail::EdgeSource;
using detail::IdSlices;
using detail::RawEdges;
using detail::RecentIds;

constexpr size_t kEdgeBatch = 1 << 16;
// An id costs 8 bytes in the map; 4 more give the whole map's bucket index
// (id_map.h) a bucket for every one or two ids. Slices are cut alike,
// though the sorted join needs no index: they hold 2/3 of the quarter.
constexpr uint64_t kIdMapBytesPerId = 12;
// At most this many slices (each has two scratch files open at a time);
// a budget too small for that holds larger slices than it should.
constexpr uint64_t kMaxSlices = 512;

// Removes the scratch directory whatever happens.
struct ScratchDir {
  std::filesystem::path path;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

struct Parsed {
  uint64_t input_edges = 0;
  bool weighted = false;                    // the input gave a weight per edge
  InputFormat format = InputFormat::kText;  // as resolved by auto
  std::optional<uint64_t> declared_vertices;
  bool symmetric = false;
  std::vector<uint64_t> id_tail;  // the last batch of ids, merged from memory
  // Where pass 2 finds the edges: kept in memory while they fit half the
  // budget, else read again from the input file (a regular file) or from
  // the scratch file of raw pairs (a stream).
  std::vector<InputEdge> held;
  std::vector<uint32_t> held_weights;  // weighted: held[i]'s weight
  bool spilled = false;
  bool reparse = false;
};

struct Ids {
  uint64_t n = 0;
  uint64_t first = 0;
  uint64_t last = 0;
};

struct Remapped {
  uint64_t self_loops = 0;
  uint64_t requested = 0;                      // edges (undirected) or arcs (directed) asked for, loops excluded
  std::vector<uint64_t> out_tail, in_tail;     // the last batches of keys, merged from memory
  std::vector<WeightedKey> weighted_out_tail;  // out_tail's records of a weighted graph
};

std::string input_name(const std::filesystem::path& input) {
  return input == "-" ? std::string("stdin") : input.string();
}

// Pass 1: input -> sorted runs of the ids seen (+ the edges kept for pass 2).
Expected<Parsed> parse_input(const std::filesystem::path& input, const ImportOptions& o,
                             const std::filesystem::path& raw_path, const std::filesystem::path& raw_weights_path,
                             EdgeRuns& id_runs, const ProgressFn& progress) {
  auto in = EdgeInput::open(input, o.format, o.threads, o.weighted);
  if (!in) return in.status();
  EdgeInput& src = **in;
  std::optional<FileWriter> raw, raw_weights;
  Parsed p;
  p.weighted = src.weighted();
  p.format = src.format();
  p.declared_vertices = src.declared_vertices();
  p.symmetric = src.symmetric();
  // A regular file can be read again; standard input cannot, even if it is one.
  const bool can_reparse = src.size_known() && input != "-";
  // Half the budget for the id batch, half for the edges held in memory.
  const uint64_t id_batch = std::max<uint64_t>(2, o.memory_bytes / 2 / sizeof(uint64_t));
  const uint64_t hold_edges = o.memory_bytes / 2 / (sizeof(InputEdge) + (p.weighted ? sizeof(uint32_t) : 0));
  // An edge takes >= 4 bytes of input: a small file needs less (a
  // stream's size is unknown).
  const uint64_t input_bound = src.size_known() ? src.file_bytes() : UINT64_MAX / 2;
  p.held.reserve(std::min<uint64_t>(hold_edges, input_bound / 4 + 1));
  if (p.weighted) p.held_weights.reserve(p.held.capacity());
  std::vector<uint64_t> ids;
  // Reserved once, so that doubling never overshoots the budget; a line or
  // pair of at least 4 bytes bounds the ids a small file can hold.
  if (!p.declared_vertices) ids.reserve(std::min(id_batch + 2 * kEdgeBatch, input_bound / 2 + 2));
  RecentIds recent(o.memory_bytes);
  std::vector<InputEdge> edges(kEdgeBatch);
  std::vector<uint32_t> weights(p.weighted ? kEdgeBatch : 0);
  while (true) {
    auto n = src.read(edges, weights);
    if (!n) return n.status();
    if (*n == 0) break;
    p.input_edges += *n;
    Status st;
    if (!raw && !p.reparse && p.held.size() + *n <= hold_edges) {
      p.held.insert(p.held.end(), edges.begin(), edges.begin() + static_cast<ptrdiff_t>(*n));
      if (p.weighted)
        p.held_weights.insert(p.held_weights.end(), weights.begin(), weights.begin() + static_cast<ptrdiff_t>(*n));
    } else if (!p.reparse) {
      if (!raw) {  // too many to hold
        if (can_reparse) {
          p.reparse = true;  // pass 2 parses the file again: no copy of it on disk
        } else {             // from now on they all go to the scratch file
          auto w = FileWriter::create(raw_path, 4 << 20, /*checksum=*/false);
          if (!w) return w.status();
          raw.emplace(std::move(*w));
          st = raw->append(p.held.data(), p.held.size() * sizeof(InputEdge));
          if (st && p.weighted) {
            auto ww = FileWriter::create(raw_weights_path, 1 << 20, /*checksum=*/false);
            if (!ww) return ww.status();
            raw_weights.emplace(std::move(*ww));
            st = raw_weights->append(p.held_weights.data(), p.held_weights.size() * sizeof(uint32_t));
          }
          p.spilled = true;
        }
        std::vector<InputEdge>().swap(p.held);
        std::vector<uint32_t>().swap(p.held_weights);
      }
      if (st && raw) st = raw->append(edges.data(), *n * sizeof(InputEdge));
      if (st && raw_weights) st = raw_weights->append(weights.data(), *n * sizeof(uint32_t));
    }
    if (!st) return st;
    if (!p.declared_vertices) {
      for (size_t i = 0; i < *n; ++i) {
        if (recent.fresh(edges[i].u)) ids.push_back(edges[i].u);
        if (recent.fresh(edges[i].v)) ids.push_back(edges[i].v);
      }
      if (ids.size() + 2 * kEdgeBatch > id_batch) {
        st = id_runs.write_run(ids);
        if (!st) return st;
      }
    }
    if (progress) progress("parse", src.bytes_consumed(), src.file_bytes());
  }
  // The whole input read: its size, also for a stream.
  if (progress) progress("parse", src.bytes_consumed(), src.size_known() ? src.file_bytes() : src.bytes_consumed());
  p.id_tail = std::move(ids);
  for (auto* f : {&raw, &raw_weights}) {
    if (!*f) continue;
    Status st = (*f)->finish(/*sync=*/false);  // scratch: read back at once, deleted after
    if (!st) return st;
  }
  if (p.input_edges == 0 && !p.declared_vertices)
    return Status::error(EINVAL, input_name(input) + ": no edges (only comments or blank lines)");
  return p;
}

// The sorted unique ids, streamed to DIR/ids.u64 (never all in memory).
Expected<Ids> write_id_map(Parsed& p, const EdgeRuns& id_runs, const std::filesystem::path& out, GraphMeta* meta,
                           const ProgressFn& progress) {
  auto w = FileWriter::create(out / kIdMapFile);
  if (!w) return w.status();
  Ids ids;
  if (p.declared_vertices) {
    ids.n = *p.declared_vertices;
    if (ids.n > kMaxVertices)
      return Status::error(
          EINVAL, "the input declares " + std::to_string(ids.n) + " vertices; at most 2^32 are supported");
    ids.first = 1;
    ids.last = ids.n;
    std::vector<uint64_t> chunk;
    for (uint64_t v = 1; v <= ids.n;) {
      chunk.clear();
      for (; v <= ids.n && chunk.size() < kEdgeBatch; ++v) chunk.push_back(v);
      Status st = w->append(chunk.data(), chunk.size() * sizeof(uint64_t));
      if (!st) return st;
    }
  } else {
    Status st = id_runs.merge(
        [&](std::span<const uint64_t> batch) -> Status {
          if (ids.n + batch.size() > kMaxVertices)
            return Status::error(EINVAL, "more than 2^32 distinct vertex ids; at most 2^32 vertices are supported");
          if (ids.n == 0) ids.first = batch.front();
          ids.last = batch.back();
          ids.n += batch.size();
          return w->append(batch.data(), batch.size() * sizeof(uint64_t));
        },
        [&](uint64_t done, uint64_t total) {
          if (progress) progress("ids", done, total);
        },
        &p.id_tail);
    if (!st) return st;
    std::vector<uint64_t>().swap(p.id_tail);  // free it (assigning {} would keep the capacity)
  }
  Status st = w->finish();
  if (!st) return st;
  meta->vertices = ids.n;
  meta->has_id_map = true;
  meta->id_map_crc32c = w->crc();
  return ids;
}

// Turns remapped edges into CSR keys (with their weights, weighted),
// sorted into runs of batch_keys.
class KeySink {
 public:
  KeySink(const ImportOptions& o, const Parsed& parsed, uint64_t batch_keys, EdgeRuns& out_runs,
          WeightedEdgeRuns& weighted_out_runs, EdgeRuns& in_runs, Remapped& r)
      : directed_(o.directed),
        mirror_(o.directed && parsed.symmetric),  // a symmetric Matrix Market entry is two arcs
        weighted_(parsed.weighted),
        batch_keys_(batch_keys),
        out_runs_(out_runs),
        weighted_out_runs_(weighted_out_runs),
        in_runs_(in_runs),
        r_(r) {
    // Reserve the batch once (untouched pages cost nothing): growing it by
    // doubling would copy it over and over.
    const uint64_t keys_per_edge = (!o.directed || parsed.symmetric) ? 2 : 1;
    const uint64_t out_keys = std::min(batch_keys_ + 2 * kEdgeBatch, keys_per_edge * parsed.input_edges);
    if (weighted_)
      r_.weighted_out_tail.reserve(out_keys);
    else
      r_.out_tail.reserve(out_keys);
    if (directed_) r_.in_tail.reserve(out_keys);
  }

  void add(uint64_t u, uint64_t v, uint32_t w = 0) {
    auto& in = r_.in_tail;
    if (u == v) {
      ++r_.self_loops;
      return;
    }
    if (!directed_) {
      ++r_.requested;
      put_out(pack_edge(u, v), w);
      put_out(pack_edge(v, u), w);
    } else {
      r_.requested += mirror_ ? 2 : 1;
      put_out(pack_edge(u, v), w);
      in.push_back(pack_edge(v, u));
      if (mirror_) {
        put_out(pack_edge(v, u), w);
        in.push_back(pack_edge(u, v));
      }
    }
  }

  // Call after every batch of at most kEdgeBatch edges.
  Status batch_done() {
    const size_t out = weighted_ ? r_.weighted_out_tail.size() : r_.out_tail.size();
    if (out + 2 * kEdgeBatch <= batch_keys_) return Status::ok();
    Status st = weighted_ ? weighted_out_runs_.write_run(r_.weighted_out_tail) : out_runs_.write_run(r_.out_tail);
    if (st && directed_) st = in_runs_.write_run(r_.in_tail);
    return st;
  }

 private:
  void put_out(uint64_t key, uint32_t w) {
    if (weighted_)
      r_.weighted_out_tail.push_back({key, w});
    else
      r_.out_tail.push_back(key);
  }

  bool directed_;
  bool mirror_;
  bool weighted_;
  uint64_t batch_keys_;
  EdgeRuns& out_runs_;
  WeightedEdgeRuns& weighted_out_runs_;
  EdgeRuns& in_runs_;
  Remapped& r_;
};

// Pass 2 with the whole id map in memory: the edges -> vertex ids -> keys.
Status remap_whole(EdgeSource& src, const IdMap& ids, uint64_t input_edges, KeySink& sink, const ProgressFn& progress) {
  std::vector<InputEdge> edges(kEdgeBatch);
  std::vector<uint32_t> weights(src.weighted() ? kEdgeBatch : 0);
  uint64_t done = 0;
  while (true) {
    auto n = src.read(edges, weights);
    if (!n) return n.status();
    if (*n == 0) break;
    constexpr size_t kAhead = 16;  // lookups in flight (prefetch distance)
    for (size_t i = 0; i < *n; ++i) {
      if (i + kAhead < *n) {
        ids.prefetch(edges[i + kAhead].u);
        ids.prefetch(edges[i + kAhead].v);
      }
      const auto u = ids.find(edges[i].u);
      const auto v = ids.find(edges[i].v);
      if (!u || !v) return src.unknown_id(!u ? edges[i].u : edges[i].v);
      sink.add(*u, *v, weights.empty() ? 0 : weights[i]);
    }
    Status st = sink.batch_done();
    if (!st) return st;
    done += *n;
    if (progress) progress("remap", done, input_edges);
  }
  return Status::ok();
}

// Scratch files of (id, payload) pairs, one per slice of the id map.
class SliceFiles {
 public:
  SliceFiles(std::filesystem::path dir, std::string name, size_t parts, size_t buffer_bytes)
      : dir_(std::move(dir)), name_(std::move(name)), parts_(parts), buffer_(buffer_bytes) {}
  ~SliceFiles() {
    for (size_t p = 0; p < parts_; ++p) {
      std::error_code ec;
      std::filesystem::remove(path(p), ec);
    }
  }
  std::filesystem::path path(size_t p) const { return dir_ / (name_ + "-" + std::to_string(p) + ".raw"); }
  Status open() {
    for (size_t p = 0; p < parts_; ++p) {
      auto w = FileWriter::create(path(p), buffer_, /*checksum=*/false);
      if (!w) return w.status();
      writers_.push_back(std::move(*w));
    }
    return Status::ok();
  }
  Status append(size_t p, InputEdge e) { return writers_[p].append(&e, sizeof e); }
  Status finish() {
    for (auto& w : writers_) {
      Status st = w.finish(/*sync=*/false);  // scratch: read back at once, deleted after
      if (!st) return st;
    }
    writers_.clear();
    return Status::ok();
  }

 private:
  std::filesystem::path dir_;
  std::string name_;
  size_t parts_;
  size_t buffer_;
  std::vector<FileWriter> writers_;
};

// Memory of the sliced remap beyond its slice of the id map (a quarter):
// an eighth for the batch of scratch records sorted and joined at once,
// the key batches the rest. The slice files' write buffers (a sixteenth
// at most, 4 KiB each at least) are given back before the first key.
struct SliceBudget {
  uint64_t batch_records;
  uint64_t file_buffer;  // per slice file
  uint64_t keys_bytes;
  bool two_threads;  // sort and join each batch as two halves at once

  SliceBudget(uint64_t memory, size_t parts, bool two_threads_allowed)
      // At least kEdgeBatch: the key sink writes a run per emitted batch
      // once its budget is small, and runs of a few thousand keys would
      // make the merge open thousands of files at once.
      : batch_records(std::max<uint64_t>(memory / 8 / sizeof(InputEdge), kEdgeBatch)),
        file_buffer(std::clamp<uint64_t>(memory / 16 / parts, 4096, 1 << 20)),
        keys_bytes(memory - memory / 4 - memory / 8),
        two_threads(two_threads_allowed) {}
};

// The sliced join's passes over the id map (remap_sliced): what they
// share, and the progress they make together.
struct SlicedJoin {
  const IdSlices& slices;
  const EdgeSource& src;  // names an id the map lacks
  bool two_threads;
  std::vector<InputEdge>& batch;  // the records of one read
  uint64_t* peak_map_bytes;       // the largest slice held
  uint64_t total;                 // records of both passes, for progress
  const ProgressFn& progress;
  uint64_t done = 0;

  // One pass: for each slice p in turn, the records (id, payload) of
  // files' file p, whose ids are in slice p, are read in batches, each
  // batch sorted by id and joined with the slice's ids (slice_join.h): the
  // id becomes its vertex (with `route`, the payload's slice in the high
  // 32 bits). emit() then takes the batch in chunks of at most kEdgeBatch
  // records. A file is deleted once read.
  template <class Emit>
  Status pass(const SliceFiles& files, const IdSlices* route, Emit&& emit) {
    for (size_t p = 0; p < slices.parts(); ++p) {
      auto ids = slices.read(p);
      if (!ids) return ids.status();
      *peak_map_bytes = std::max<uint64_t>(*peak_map_bytes, ids->capacity() * sizeof(uint64_t));
      auto f = RawEdges::open(files.path(p));
      if (!f) return f.status();
      while (true) {
        auto n = f->read(batch);
        if (!n) return n.status();
        if (*n == 0) break;
        const std::span<InputEdge> recs(batch.data(), *n);
        if (auto missing = detail::map_batch_to_slice(recs, *ids, slices.first_vertex(p), route, two_threads))
          return src.unknown_id(*missing);
        for (size_t i = 0; i < recs.size(); i += kEdgeBatch) {
          Status st = emit(recs.subspan(i, std::min(kEdgeBatch, recs.size() - i)));
          if (!st) return st;
        }
        done += *n;
        if (progress) progress("remap", done, total);
      }
      std::error_code ec;
      std::filesystem::remove(files.path(p), ec);  // frees its space for the next files
    }
    return Status::ok();
  }
};

// Pass 2 with the id map in slices (a partitioned join on the id ranges):
//   split  each edge (u, v) goes to the file of u's slice;
//   source for each slice: map u of its edges to U and append (v, U) to
//          the file of v's slice;
//   target for each slice: map v to V, hand (U, V) to the sink.
// Each edge is written twice and read twice more; one slice of the map is
// in memory at a time.
Status remap_sliced(EdgeSource& src, std::vector<InputEdge>& held, const IdSlices& slices,
                    const std::filesystem::path& scratch, uint64_t input_edges, const SliceBudget& budget,
                    uint64_t* peak_map_bytes, KeySink& sink, const ProgressFn& progress) {
  const size_t parts = slices.parts();
  SliceFiles by_source(scratch, "by-source", parts, budget.file_buffer);
  SliceFiles by_target(scratch, "by-target", parts, budget.file_buffer);
  Status st = by_source.open();
  if (!st) return st;
  {
    std::vector<InputEdge> edges(kEdgeBatch);
    std::vector<uint32_t> no_weights;  // an unweighted input: import_graph() refuses a sliced weighted one
    uint64_t done = 0;
    while (true) {
      auto n = src.read(edges, no_weights);
      if (!n) return n.status();
      if (*n == 0) break;
      for (size_t i = 0; i < *n && st; ++i) st = by_source.append(slices.part_of(edges[i].u), edges[i]);
      if (!st) return st;
      done += *n;
      if (progress) progress("split", done, input_edges);
    }
  }
  st = by_source.finish();
  if (!st) return st;
  std::vector<InputEdge>().swap(held);

  std::vector<InputEdge> batch(budget.batch_records);
  SlicedJoin join{slices, src, budget.two_threads, batch, peak_map_bytes, 2 * input_edges, progress};
  st = by_target.open();
  if (!st) return st;
  st = join.pass(by_source, &slices, [&](std::span<const InputEdge> recs) -> Status {
    for (const InputEdge& e : recs) {
      // e.u: v's slice << 32 | U
      Status s = by_target.append(e.u >> 32, InputEdge{e.v, e.u & UINT32_MAX});
      if (!s) return s;
    }
    return Status::ok();
  });
  if (!st) return st;
  st = by_target.finish();
  if (!st) return st;
  return join.pass(by_target, nullptr, [&](std::span<const InputEdge> recs) -> Status {
    for (const InputEdge& e : recs) sink.add(e.v, e.u);  // (U, V)
    return sink.batch_done();
  });
}

// import_graph()'s steps around its passes.

// The output directory exists, and holds nothing an interrupted import
// could leave looking valid: an old graph.meta must not vouch for the
// half-written files that follow, and an old transpose must not outlive
// the graph it belonged to.
Status prepare_output(const std::filesystem::path& out, bool directed) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Status::error(ec.value(), out.string() + ": cannot create directory: " + ec.message());
  std::filesystem::remove(out / kMetaFile, ec);
  std::filesystem::remove(out / kWeightsFile, ec);
  if (!directed) {
    std::filesystem::remove(out / kInIndexFile, ec);
    std::filesystem::remove(out / kInAdjacencyFile, ec);
  }
  return Status::ok();
}

// The whole id map, if it fits in `map_budget` or needs no memory
// (contiguous ids); nullopt when pass 2 must use slices of slice_ids.
Expected<std::optional<IdMap>> whole_id_map(const Ids& ids, const std::filesystem::path& out, uint64_t map_budget,
                                            uint64_t slice_ids) {
  const bool contiguous = ids.n == 0 || ids.last - ids.first == ids.n - 1;
  if (contiguous) return std::optional<IdMap>(IdMap::range(ids.first, ids.n));
  if (ids.n > slice_ids) return std::optional<IdMap>();
  auto all = detail::read_ids(out / kIdMapFile, 0, ids.n);
  if (!all) return all.status();
  const uint64_t ids_bytes = ids.n * sizeof(uint64_t);
  return std::optional<IdMap>(IdMap::sorted(std::move(*all), map_budget > ids_bytes ? map_budget - ids_bytes : 0));
}

// Adds a merged batch to a CSR writer: keys alone, or keys and weights
// (split into the two vectors given).
Status add_to(CsrWriter& w, std::span<const uint64_t> keys, std::vector<uint64_t>&, std::vector<uint32_t>&) {
  return w.add(keys);
}
Status add_to(CsrWriter& w, std::span<const WeightedKey> records, std::vector<uint64_t>& keys,
              std::vector<uint32_t>& weights) {
  keys.resize(records.size());
  weights.resize(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    keys[i] = records[i].key;
    weights[i] = records[i].weight;
  }
  return w.add(keys, weights);
}

// Merges sorted runs (and their tail) into the CSR `w` writes.
template <class Record>
Expected<CsrWriter> merge_into(Expected<CsrWriter> w, SortedRuns<Record>& runs, std::vector<Record>& tail,
                               const char* phase, const ProgressFn& progress) {
  if (!w) return w.status();
  std::vector<uint64_t> keys;
  std::vector<uint32_t> weights;
  Status s = runs.merge([&](std::span<const Record> batch) { return add_to(*w, batch, keys, weights); },
                        [&](uint64_t done, uint64_t total) {
                          if (progress) progress(phase, done, total);
                        },
                        &tail);
  if (!s) return s;
  std::vector<Record>().swap(tail);  // free it (assigning {} would keep the capacity)
  s = w->finish();
  if (!s) return s;
  runs.remove();
  return w;
}

// Pass 3: the sorted key runs merged into the CSR files (with the weights,
// weighted; and, directed, the transpose's), their sizes and checksums
// recorded in meta.
Status write_csr(const std::filesystem::path& out, bool directed, EdgeRuns& out_runs,
                 WeightedEdgeRuns& weighted_out_runs, EdgeRuns& in_runs, Remapped& remapped, GraphMeta& meta,
                 const ProgressFn& progress) {
  auto csr = meta.weighted
                 ? merge_into(CsrWriter::create_weighted(out, meta.vertices), weighted_out_runs,
                              remapped.weighted_out_tail, "merge", progress)
                 : merge_into(CsrWriter::create(out, meta.vertices), out_runs, remapped.out_tail, "merge", progress);
  if (!csr) return csr.status();
  meta.weights_crc32c = csr->weights_crc();
  meta.max_weight = csr->max_weight();
  meta.adjacency_entries = csr->entries();
  meta.edges = directed ? csr->entries() : csr->entries() / 2;
  meta.index_crc32c = csr->index_crc();
  meta.adjacency_crc32c = csr->adjacency_crc();
  meta.duplicates = remapped.requested - meta.edges;
  if (directed) {
    auto tr = merge_into(CsrWriter::create(out, meta.vertices, kInIndexFile, kInAdjacencyFile), in_runs,
                         remapped.in_tail, "merge-in", progress);
    if (!tr) return tr.status();
    if (tr->entries() != meta.adjacency_entries)
      return Status::error(EIO, "transpose has " + std::to_string(tr->entries()) + " arcs, the graph " +
                                    std::to_string(meta.adjacency_entries));
    meta.in_index_crc32c = tr->index_crc();
    meta.in_adjacency_crc32c = tr->adjacency_crc();
  }
  return Status::ok();
}

}  // namespace

Expected<GraphMeta> import_graph(const std::filesystem::path& input, const ImportOptions& o,
                                 const std::filesystem::path& out, const ProgressFn& progress, ImportStats* stats) {
  if (o.memory_bytes < kMinMemoryBytes)
    return Status::error(EINVAL, "memory budget must be at least " + std::to_string(kMinMemoryBytes) + " bytes");
  if (Status s = prepare_output(out, o.directed); !s) return s;
  std::error_code ec;
  ScratchDir scratch{out / (".import-runs-" + std::to_string(::getpid()))};
  std::filesystem::create_directories(scratch.path, ec);
  if (ec) return Status::error(ec.value(), scratch.path.string() + ": cannot create: " + ec.message());
  const auto raw_path = scratch.path / "edges.raw";
  const auto raw_weights_path = scratch.path / "weights.raw";
  ImportStats local_stats;
  ImportStats& st_out = stats != nullptr ? *stats : local_stats;
  st_out = ImportStats{};

  GraphMeta meta;
  meta.imported = true;
  meta.directed = o.directed;
  // --threads 1 keeps the sorts and joins on this thread too.
  const bool two_threads = o.threads != 1;
  // Scratch runs are not fsynced: they are read back at once and deleted;
  // the graph files are.
  EdgeRuns id_runs(scratch.path / "ids", /*sync_runs=*/false, two_threads);
  auto parsed = parse_input(input, o, raw_path, raw_weights_path, id_runs, progress);
  if (!parsed) return parsed.status();
  meta.input_edges = parsed->input_edges;
  meta.weighted = parsed->weighted;
  st_out.input_reads = parsed->reparse ? 2 : 1;
  auto ids = write_id_map(*parsed, id_runs, out, &meta, progress);
  if (!ids) return ids.status();
  id_runs.remove();

  // Where pass 2 reads the edges.
  Expected<EdgeSource> src =
      parsed->spilled   ? EdgeSource::raw(raw_path, parsed->weighted ? raw_weights_path : std::filesystem::path())
        : parsed->reparse ? EdgeSource::reparse(input, parsed->format, o.threads, parsed->input_edges, parsed->weighted)
                        : Expected<EdgeSource>(EdgeSource::held(parsed->held, parsed->held_weights, parsed->weighted));
  if (!src) return src.status();

  // The id map gets a quarter of the budget: whole if it fits (or needs no
  // memory: contiguous ids), else in slices that do.
  const uint64_t map_budget = o.memory_bytes / 4;
  uint64_t slice_ids = std::max<uint64_t>(1, map_budget / kIdMapBytesPerId);
  if (o.max_slice_ids != 0) slice_ids = std::min(slice_ids, o.max_slice_ids);
  slice_ids = std::max(slice_ids, (ids->n + kMaxSlices - 1) / kMaxSlices);
  auto whole_map = whole_id_map(*ids, out, map_budget, slice_ids);
  if (!whole_map) return whole_map.status();
  std::optional<IdMap> whole = std::move(*whole_map);
  if (!whole && parsed->weighted)
    return Status::error(EINVAL, input_name(input) + ": a weighted edge list whose " + std::to_string(ids->n) +
                                     " vertex ids are not contiguous needs the whole id map in memory (" +
                                     std::to_string(ids->n * kIdMapBytesPerId) +
                                     " bytes, a quarter of --memory): " + "raise --memory to at least " +
                                     std::to_string(4 * ids->n * kIdMapBytesPerId) + " bytes");

  // Pass 2: remap into sorted runs of CSR keys. The key batches get what
  // the whole map and the held edges leave of the budget, at least a
  // quarter; with a sliced map, what SliceBudget leaves (five eighths).
  EdgeRuns out_runs(scratch.path / "out", /*sync_runs=*/false, two_threads);
  WeightedEdgeRuns weighted_out_runs(scratch.path / "out-weighted", /*sync_runs=*/false, two_threads);
  EdgeRuns in_runs(scratch.path / "in", /*sync_runs=*/false, two_threads);
  std::optional<IdSlices> slices;
  std::optional<SliceBudget> slice_budget;
  if (!whole) {
    auto s = IdSlices::open(out / kIdMapFile, ids->n, slice_ids);
    if (!s) return s.status();
    slices.emplace(std::move(*s));
    slice_budget.emplace(o.memory_bytes, slices->parts(), two_threads);
  }
  const uint64_t held_bytes =
      parsed->held.capacity() * sizeof(InputEdge) + parsed->held_weights.capacity() * sizeof(uint32_t);
  // Sliced, the held edges are given back before the keys are made.
  const uint64_t budget = whole ? o.memory_bytes - std::min(o.memory_bytes / 4 * 3, whole->memory_bytes() + held_bytes)
                                : slice_budget->keys_bytes;
  // A weighted out-key is a 16-byte record; the in-keys stay 8 bytes.
  const uint64_t key_bytes = parsed->weighted ? sizeof(WeightedKey) + (o.directed ? sizeof(uint64_t) : 0)
                                              : sizeof(uint64_t) * (o.directed ? 2 : 1);
  const uint64_t batch_keys = std::max<uint64_t>(4, budget / key_bytes);
  Remapped remapped;
  KeySink sink(o, *parsed, batch_keys, out_runs, weighted_out_runs, in_runs, remapped);
  Status st;
  if (whole) {
    st_out.id_map_slices = 1;
    st_out.id_map_bytes = whole->memory_bytes();
    st = remap_whole(*src, *whole, parsed->input_edges, sink, progress);
    whole.reset();
  } else {
    st_out.id_map_slices = slices->parts();
    st = remap_sliced(*src, parsed->held, *slices, scratch.path, parsed->input_edges, *slice_budget,
                      &st_out.id_map_bytes, sink, progress);
  }
  if (!st) return st;
  st_out.key_runs = out_runs.run_count() + weighted_out_runs.run_count() + in_runs.run_count();
  std::vector<InputEdge>().swap(parsed->held);
  std::vector<uint32_t>().swap(parsed->held_weights);
  std::filesystem::remove(raw_path, ec);
  std::filesystem::remove(raw_weights_path, ec);
  meta.self_loops = remapped.self_loops;

  st = write_csr(out, o.directed, out_runs, weighted_out_runs, in_runs, remapped, meta, progress);
  if (!st) return st;
  st = write_meta(out, meta);
  if (!st) return st;
  return meta;
}

}  // namespace peregrine::graph
