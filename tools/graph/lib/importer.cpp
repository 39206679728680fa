#include "peregrine/graph/importer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "peregrine/graph/csr_writer.h"
#include "peregrine/graph/edge_runs.h"
#include "peregrine/graph/file_writer.h"
#include "peregrine/graph/id_map.h"
#include "raw_edge_file.h"
#include "recent_ids.h"

namespace peregrine::graph {
namespace {

using detail::RawEdges;
using detail::RecentIds;

constexpr size_t kEdgeBatch = 1 << 16;

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
  std::optional<uint64_t> declared_vertices;
  bool symmetric = false;
  std::vector<uint64_t> id_tail;  // the last batch of ids, merged from memory
  // The edges themselves: kept in memory while they fit half the budget,
  // else all in the scratch file.
  std::vector<InputEdge> held;
  bool spilled = false;
};

struct Remapped {
  uint64_t self_loops = 0;
  uint64_t requested = 0;  // edges (undirected) or arcs (directed) asked for, loops excluded
  std::vector<uint64_t> out_tail, in_tail;  // the last batches of keys, merged from memory
};

// Pass 1: input -> scratch pairs + sorted runs of the ids seen.
Expected<Parsed> parse_input(const std::filesystem::path& input, const ImportOptions& o,
                             const std::filesystem::path& raw_path, EdgeRuns& id_runs, const ProgressFn& progress) {
  auto in = EdgeInput::open(input, o.format, o.threads);
  if (!in) return in.status();
  EdgeInput& src = **in;
  std::optional<FileWriter> raw;
  Parsed p;
  p.declared_vertices = src.declared_vertices();
  p.symmetric = src.symmetric();
  // Half the budget for the id batch, half for the edges held in memory.
  const uint64_t id_batch = std::max<uint64_t>(2, o.memory_bytes / 2 / sizeof(uint64_t));
  const uint64_t hold_edges = o.memory_bytes / 2 / sizeof(InputEdge);
  // An edge takes >= 4 bytes of input: a small file needs less (a
  // stream's size is unknown).
  const uint64_t input_bound = src.size_known() ? src.file_bytes() : UINT64_MAX / 2;
  p.held.reserve(std::min<uint64_t>(hold_edges, input_bound / 4 + 1));
  std::vector<uint64_t> ids;
  // Reserved once, so that doubling never overshoots the budget; a line or
  // pair of at least 4 bytes bounds the ids a small file can hold.
  if (!p.declared_vertices) ids.reserve(std::min(id_batch + 2 * kEdgeBatch, input_bound / 2 + 2));
  RecentIds recent(o.memory_bytes);
  std::vector<InputEdge> edges(kEdgeBatch);
  while (true) {
    auto n = src.read(edges);
    if (!n) return n.status();
    if (*n == 0) break;
    p.input_edges += *n;
    Status st;
    if (!raw && p.held.size() + *n <= hold_edges) {
      p.held.insert(p.held.end(), edges.begin(), edges.begin() + static_cast<ptrdiff_t>(*n));
    } else {
      if (!raw) {  // too many to hold: from now on they all go to the scratch file
        auto w = FileWriter::create(raw_path, 4 << 20);
        if (!w) return w.status();
        raw.emplace(std::move(*w));
        st = raw->append(p.held.data(), p.held.size() * sizeof(InputEdge));
        std::vector<InputEdge>().swap(p.held);
        p.spilled = true;
      }
      if (st) st = raw->append(edges.data(), *n * sizeof(InputEdge));
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
  if (raw) {
    Status st = raw->finish(/*sync=*/false);  // scratch: read back at once, deleted after
    if (!st) return st;
  }
  if (p.input_edges == 0 && !p.declared_vertices)
    return Status::error(EINVAL, (input == "-" ? std::string("stdin") : input.string()) +
                                     ": no edges (only comments or blank lines)");
  return p;
}

// The sorted unique ids, also written to DIR/ids.u64.
Expected<IdMap> build_id_map(Parsed& p, const EdgeRuns& id_runs, const std::filesystem::path& out,
                             uint64_t memory_bytes, GraphMeta* meta, const ProgressFn& progress) {
  auto w = FileWriter::create(out / kIdMapFile);
  if (!w) return w.status();
  uint64_t n = 0;
  std::optional<IdMap> map;
  if (p.declared_vertices) {
    n = *p.declared_vertices;
    if (n > kMaxVertices)
      return Status::error(EINVAL, "Matrix Market matrix has " + std::to_string(n) +
                                       " rows; at most 2^32 vertices are supported");
    std::vector<uint64_t> chunk;
    for (uint64_t v = 1; v <= n;) {
      chunk.clear();
      for (; v <= n && chunk.size() < kEdgeBatch; ++v) chunk.push_back(v);
      Status st = w->append(chunk.data(), chunk.size() * sizeof(uint64_t));
      if (!st) return st;
    }
    map = IdMap::range(1, n);
  } else {
    std::vector<uint64_t> ids;
    Status st = id_runs.merge(
        [&](std::span<const uint64_t> batch) -> Status {
          if (ids.size() + batch.size() > kMaxVertices)
            return Status::error(EINVAL, "more than 2^32 distinct vertex ids; at most 2^32 vertices are supported");
          ids.insert(ids.end(), batch.begin(), batch.end());
          return w->append(batch.data(), batch.size() * sizeof(uint64_t));
        },
        [&](uint64_t done, uint64_t total) {
          if (progress) progress("ids", done, total);
        },
        &p.id_tail);
    if (!st) return st;
    std::vector<uint64_t>().swap(p.id_tail);  // free it (assigning {} would keep the capacity)
    n = ids.size();
    // A lookup table may take a quarter of the budget; the key batches of
    // the remap pass get the rest.
    map = IdMap::sorted(std::move(ids), memory_bytes / 4);
  }
  Status st = w->finish();
  if (!st) return st;
  meta->vertices = n;
  meta->has_id_map = true;
  meta->id_map_crc32c = w->crc();
  return std::move(*map);
}

// Pass 2: the scratch pairs -> vertex ids -> sorted runs of CSR keys.
Expected<Remapped> remap_edges(const std::filesystem::path& raw_path, const IdMap& ids, const Parsed& parsed,
                               const ImportOptions& o, EdgeRuns& out_runs, EdgeRuns& in_runs,
                               const ProgressFn& progress) {
  // The lookup (<= a quarter) and the held edges (<= half) come out of the
  // budget; the key batches get the rest, at least a quarter.
  const uint64_t held_bytes = parsed.held.capacity() * sizeof(InputEdge);
  const uint64_t budget =
      o.memory_bytes - std::min(o.memory_bytes / 4 * 3, ids.lookup_bytes() + held_bytes);
  const uint64_t batch_keys = std::max<uint64_t>(4, budget / sizeof(uint64_t) / (o.directed ? 2 : 1));
  std::optional<RawEdges> raw;
  if (parsed.spilled) {
    auto f = RawEdges::open(raw_path);
    if (!f) return f.status();
    raw.emplace(std::move(*f));
  }
  size_t held_pos = 0;
  // The next batch of edges, from memory or from the scratch file.
  auto next_batch = [&](std::vector<InputEdge>& buf) -> Expected<size_t> {
    if (raw) return raw->read(buf);
    const size_t n = std::min(buf.size(), parsed.held.size() - held_pos);
    std::copy_n(parsed.held.begin() + static_cast<ptrdiff_t>(held_pos), n, buf.begin());
    held_pos += n;
    return n;
  };
  Remapped r;
  std::vector<uint64_t>& out_keys = r.out_tail;
  std::vector<uint64_t>& in_keys = r.in_tail;
  // Reserve the batch once (untouched pages cost nothing): growing it by
  // doubling would copy it over and over.
  const uint64_t keys_per_edge = (!o.directed || parsed.symmetric) ? 2 : 1;
  out_keys.reserve(std::min(batch_keys + 2 * kEdgeBatch, keys_per_edge * parsed.input_edges));
  if (o.directed) in_keys.reserve(out_keys.capacity());
  std::vector<InputEdge> edges(kEdgeBatch);
  uint64_t done = 0;
  const bool mirror = o.directed && parsed.symmetric;  // a symmetric Matrix Market entry is two arcs
  while (true) {
    auto n = next_batch(edges);
    if (!n) return n.status();
    if (*n == 0) break;
    for (size_t i = 0; i < *n; ++i) {
      const uint64_t u = *ids.find(edges[i].u);
      const uint64_t v = *ids.find(edges[i].v);
      if (u == v) {
        ++r.self_loops;
        continue;
      }
      if (!o.directed) {
        ++r.requested;
        out_keys.push_back(pack_edge(u, v));
        out_keys.push_back(pack_edge(v, u));
      } else {
        r.requested += mirror ? 2 : 1;
        out_keys.push_back(pack_edge(u, v));
        in_keys.push_back(pack_edge(v, u));
        if (mirror) {
          out_keys.push_back(pack_edge(v, u));
          in_keys.push_back(pack_edge(u, v));
        }
      }
    }
    if (out_keys.size() + 2 * kEdgeBatch > batch_keys) {
      Status st = out_runs.write_run(out_keys);
      if (st && o.directed) st = in_runs.write_run(in_keys);
      if (!st) return st;
    }
    done += *n;
    if (progress) progress("remap", done, parsed.input_edges);
  }
  return r;
}

}  // namespace

Expected<GraphMeta> import_graph(const std::filesystem::path& input, const ImportOptions& o,
                                 const std::filesystem::path& out, const ProgressFn& progress) {
  if (o.memory_bytes < kMinMemoryBytes)
    return Status::error(EINVAL, "memory budget must be at least " + std::to_string(kMinMemoryBytes) + " bytes");
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Status::error(ec.value(), out.string() + ": cannot create directory: " + ec.message());
  // An old graph.meta must not vouch for the half-written files that follow,
  // and an old transpose must not outlive the graph it belonged to.
  std::filesystem::remove(out / kMetaFile, ec);
  if (!o.directed) {
    std::filesystem::remove(out / kInIndexFile, ec);
    std::filesystem::remove(out / kInAdjacencyFile, ec);
  }
  ScratchDir scratch{out / (".import-runs-" + std::to_string(::getpid()))};
  std::filesystem::create_directories(scratch.path, ec);
  if (ec) return Status::error(ec.value(), scratch.path.string() + ": cannot create: " + ec.message());
  const auto raw_path = scratch.path / "edges.raw";

  GraphMeta meta;
  meta.imported = true;
  meta.directed = o.directed;
  // Scratch runs are not fsynced: they are read back at once and deleted;
  // the graph files are.
  EdgeRuns id_runs(scratch.path / "ids", /*sync_runs=*/false);
  auto parsed = parse_input(input, o, raw_path, id_runs, progress);
  if (!parsed) return parsed.status();
  meta.input_edges = parsed->input_edges;
  auto ids = build_id_map(*parsed, id_runs, out, o.memory_bytes, &meta, progress);
  if (!ids) return ids.status();
  id_runs.remove();

  // Pass 2: remap into sorted runs of CSR keys.
  EdgeRuns out_runs(scratch.path / "out", /*sync_runs=*/false);
  EdgeRuns in_runs(scratch.path / "in", /*sync_runs=*/false);
  auto remapped = remap_edges(raw_path, *ids, *parsed, o, out_runs, in_runs, progress);
  if (!remapped) return remapped.status();
  std::vector<InputEdge>().swap(parsed->held);
  std::filesystem::remove(raw_path, ec);
  meta.self_loops = remapped->self_loops;

  auto merge_into = [&](EdgeRuns& runs, std::vector<uint64_t>& tail, const char* index_file,
                        const char* adjacency_file, const char* phase) -> Expected<CsrWriter> {
    auto w = CsrWriter::create(out, meta.vertices, index_file, adjacency_file);
    if (!w) return w.status();
    Status st = runs.merge([&](std::span<const uint64_t> batch) { return w->add(batch); },
                           [&](uint64_t done, uint64_t total) {
                             if (progress) progress(phase, done, total);
                           },
                           &tail);
    if (!st) return st;
    std::vector<uint64_t>().swap(tail);  // free it (assigning {} would keep the capacity)
    st = w->finish();
    if (!st) return st;
    runs.remove();
    return std::move(*w);
  };
  auto csr = merge_into(out_runs, remapped->out_tail, kIndexFile, kAdjacencyFile, "merge");
  if (!csr) return csr.status();
  meta.adjacency_entries = csr->entries();
  meta.edges = o.directed ? csr->entries() : csr->entries() / 2;
  meta.index_crc32c = csr->index_crc();
  meta.adjacency_crc32c = csr->adjacency_crc();
  meta.duplicates = remapped->requested - meta.edges;
  if (o.directed) {
    auto tr = merge_into(in_runs, remapped->in_tail, kInIndexFile, kInAdjacencyFile, "merge-in");
    if (!tr) return tr.status();
    if (tr->entries() != meta.adjacency_entries)
      return Status::error(EIO, "transpose has " + std::to_string(tr->entries()) + " arcs, the graph " +
                                    std::to_string(meta.adjacency_entries));
    meta.in_index_crc32c = tr->index_crc();
    meta.in_adjacency_crc32c = tr->adjacency_crc();
  }
  Status st = write_meta(out, meta);
  if (!st) return st;
  return meta;
}

}  // namespace peregrine::graph
