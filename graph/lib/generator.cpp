#include "peregrine/graph/generator.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

#include "peregrine/graph/csr_writer.h"
#include "peregrine/graph/edge_runs.h"
#include "peregrine/graph/kronecker.h"
#include "peregrine/graph/rng.h"

namespace peregrine::graph {
namespace {

// Marks a self-loop; never a real key since u == v there.
constexpr uint64_t kDropKey = ~0ULL;
// Edges sampled between progress reports.
constexpr uint64_t kSliceEdges = 1ULL << 22;

Status check_options(const GenOptions& o) {
  if (o.scale < 1 || o.scale > kMaxScale)
    return Status::error(EINVAL, "scale must be between 1 and 32, not " + std::to_string(o.scale));
  if (o.edgefactor < 1) return Status::error(EINVAL, "edgefactor must be at least 1");
  if (o.memory_bytes < kMinMemoryBytes)
    return Status::error(EINVAL, "memory budget must be at least " + std::to_string(kMinMemoryBytes) + " bytes");
  return Status::ok();
}

// Fills keys[2*(i-first)], keys[2*(i-first)+1] with both directions of edge i.
void sample_range(const KroneckerSampler& s, uint64_t first, uint64_t last, uint64_t* keys) {
  for (uint64_t i = first; i < last; ++i) {
    auto [u, v] = s.edge(i);
    uint64_t* k = keys + 2 * (i - first);
    if (u == v) {
      k[0] = k[1] = kDropKey;
    } else {
      k[0] = pack_edge(u, v);
      k[1] = pack_edge(v, u);
    }
  }
}

}  // namespace

uint32_t generated_weight(uint64_t seed, uint32_t u, uint32_t v) {
  constexpr uint64_t kWeightStream = 0x7765696768747321ULL;  // "weights!": apart from the edges' stream
  const uint64_t pair = u < v ? pack_edge(u, v) : pack_edge(v, u);
  return static_cast<uint32_t>(mix64(mix64(seed ^ kWeightStream) ^ pair) % kMaxGeneratedWeight) + 1;
}

Expected<GraphMeta> generate_graph(const GenOptions& options, const std::filesystem::path& out,
                                   const ProgressFn& progress) {
  Status st = check_options(options);
  if (!st) return st;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Status::error(ec.value(), out.string() + ": cannot create directory: " + ec.message());
  // An old graph.meta must not vouch for the half-written files that follow.
  std::filesystem::remove(out / kMetaFile, ec);
  // Nor may an imported graph's id map or transpose, or weights, outlive it.
  for (const char* stale : {kIdMapFile, kInIndexFile, kInAdjacencyFile, kWeightsFile})
    std::filesystem::remove(out / stale, ec);

  GraphMeta meta;
  meta.scale = options.scale;
  meta.edgefactor = options.edgefactor;
  meta.seed = options.seed;
  meta.vertices = 1ULL << options.scale;
  meta.sampled_edges = meta.vertices * options.edgefactor;

  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const uint64_t batch_keys = std::max<uint64_t>(2, options.memory_bytes / sizeof(uint64_t)) & ~1ULL;
  const uint64_t batch_edges = batch_keys / 2;
  KroneckerSampler sampler(options.scale, options.seed);
  EdgeRuns runs(out / (".gen-runs-" + std::to_string(::getpid())), /*sync_runs=*/true, threads != 1);

  std::vector<uint64_t> keys;
  for (uint64_t first = 0; first < meta.sampled_edges; first += batch_edges) {
    uint64_t last = std::min(meta.sampled_edges, first + batch_edges);
    keys.resize(2 * (last - first));
    // Sample in slices so that progress moves during a big batch.
    for (uint64_t slice = first; slice < last; slice += kSliceEdges) {
      const uint64_t slice_end = std::min(last, slice + kSliceEdges);
      const uint64_t per = (slice_end - slice + threads - 1) / threads;
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t) {
        uint64_t a = slice + t * per;
        uint64_t b = std::min(slice_end, a + per);
        if (a >= b) break;
        pool.emplace_back(sample_range, std::cref(sampler), a, b, keys.data() + 2 * (a - first));
      }
      for (auto& th : pool) th.join();
      if (progress) progress("sample", slice_end, meta.sampled_edges);
    }
    st = runs.write_run(keys, kDropKey);
    if (!st) return st;
  }
  keys.clear();
  keys.shrink_to_fit();  // give the batch back before the merge

  auto writer =
      options.weighted ? CsrWriter::create_weighted(out, meta.vertices) : CsrWriter::create(out, meta.vertices);
  if (!writer) return writer.status();
  std::vector<uint32_t> weights;
  st = runs.merge(
      [&](std::span<const uint64_t> batch) {
        if (!options.weighted) return writer->add(batch);
        weights.resize(batch.size());
        for (size_t i = 0; i < batch.size(); ++i)
          weights[i] = generated_weight(options.seed, edge_source(batch[i]), edge_target(batch[i]));
        return writer->add(batch, weights);
      },
      [&](uint64_t done, uint64_t total) {
        if (progress) progress("merge", done, total);
      });
  if (!st) return st;
  st = writer->finish(&meta);
  if (!st) return st;
  runs.remove();
  st = write_meta(out, meta);
  if (!st) return st;
  return meta;
}

}  // namespace peregrine::graph
