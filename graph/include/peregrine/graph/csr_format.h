// The on-disk CSR graph (docs/graph.md, "On-disk format") and opening it.
//
// A graph directory holds:
//   graph.meta        text, one "key value" per line; written last, so a
//                     graph without it is an unfinished one;
//   index.u64         n+1 little-endian uint64 offsets, counted in neighbour
//                     entries: the out-list of v is entries [index[v], index[v+1]);
//   adjacency.u32     little-endian uint32 neighbour ids, each list ascending;
//   in_index.u64,     directed graphs only: the transposed CSR (in-lists),
//   in_adjacency.u32  same layout, for PageRank's pull and the checks;
//   ids.u64           imported graphs only: n ascending uint64, the user's id
//                     of every vertex (vertex v is ids[v] to the user);
//   weights.u32       weighted graphs only: little-endian uint32, the weight
//                     of every out-list entry, in adjacency.u32's order.
// Version 1 (gen before import existed) is undirected, 2^scale vertices,
// and still opens. Version 3 is version 2 with weights: only a weighted
// graph is written as 3, so builds that read 2 keep reading the others.
// open_graph() checks everything that is cheap (version, file sizes, the
// offsets) and loads the index into memory: the vertex side of a
// semi-external algorithm.
//
// Thread rules: a Graph is immutable once opened and may be read from any
// number of threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph {

using Vertex = uint32_t;  // at most 2^32 vertices, so a neighbour id fits 4 bytes

inline constexpr uint32_t kFormatVersion = 2;          // what this build writes for an unweighted graph
inline constexpr uint32_t kWeightedFormatVersion = 3;  // ... and for a weighted one; the newest it reads
inline constexpr uint32_t kOldestFormatVersion = 1;    // oldest it still reads
inline constexpr uint32_t kMaxScale = 32;
inline constexpr uint64_t kMaxVertices = 1ULL << 32;
// The most list entries (and edges) a graph.meta may name: eight bytes an
// entry (a neighbour and a weight) still fit a file's 63-bit size.
inline constexpr uint64_t kMaxAdjacencyEntries = 1ULL << 60;
inline constexpr const char* kMetaFile = "graph.meta";
inline constexpr const char* kIndexFile = "index.u64";
inline constexpr const char* kAdjacencyFile = "adjacency.u32";
inline constexpr const char* kInIndexFile = "in_index.u64";
inline constexpr const char* kInAdjacencyFile = "in_adjacency.u32";
inline constexpr const char* kIdMapFile = "ids.u64";
inline constexpr const char* kWeightsFile = "weights.u32";

struct GraphMeta {
  uint32_t format_version = kFormatVersion;
  bool directed = false;
  bool imported = false;  // made by `import` (else by `gen`)
  uint64_t vertices = 0;
  uint64_t edges = 0;              // undirected: edges kept; directed: arcs kept
  uint64_t adjacency_entries = 0;  // undirected: 2 * edges; directed: edges
  uint32_t index_crc32c = 0;
  uint32_t adjacency_crc32c = 0;
  // gen only (Kronecker parameters).
  uint32_t scale = 0;
  uint32_t edgefactor = 0;
  uint64_t seed = 0;
  uint64_t sampled_edges = 0;  // edgefactor * 2^scale Kronecker samples
  // import only.
  uint64_t input_edges = 0;  // edge lines / entries read
  uint64_t self_loops = 0;   // of which self-loops, dropped
  uint64_t duplicates = 0;   // edges dropped as already present
  bool has_id_map = false;
  uint32_t id_map_crc32c = 0;
  // weighted only (format 3): weights.u32. An undirected edge has one
  // weight, stored at both of its entries.
  bool weighted = false;
  uint32_t weights_crc32c = 0;
  uint32_t max_weight = 0;  // the largest weight (sssp's default bucket width)
  // directed only: the transposed CSR.
  uint32_t in_index_crc32c = 0;
  uint32_t in_adjacency_crc32c = 0;
};

std::string format_meta(const GraphMeta& meta);
// `path` only names the file in error messages.
Expected<GraphMeta> parse_meta(const std::string& text, const std::string& path);
// Writes DIR/graph.meta through a temporary file and rename.
Status write_meta(const std::filesystem::path& dir, const GraphMeta& meta);
Expected<GraphMeta> read_meta(const std::filesystem::path& dir);

struct Graph {
  std::filesystem::path dir;
  GraphMeta meta;
  std::vector<uint64_t> offsets;  // n+1 entries, from index.u64 (in_index.u64 for a transpose)
  std::string adjacency_file = kAdjacencyFile;

  uint64_t num_vertices() const { return meta.vertices; }
  bool directed() const { return meta.directed; }
  uint64_t degree(uint64_t v) const { return offsets[v + 1] - offsets[v]; }
  std::filesystem::path adjacency_path() const { return dir / adjacency_file; }
  // The out-lists' weights (a transpose has none of its own).
  bool weighted() const { return meta.weighted && adjacency_file == kAdjacencyFile; }
  std::filesystem::path weights_path() const { return dir / kWeightsFile; }
};

// Opens DIR: parses graph.meta, checks the format version, the file sizes
// (weights.u32's too) and that the offsets start at 0, never decrease and
// end at the entry count.
Expected<Graph> open_graph(const std::filesystem::path& dir);

// The in-lists of a directed graph as a Graph of their own (same meta,
// offsets from in_index.u64, adjacency from in_adjacency.u32), checked as
// open_graph() checks the out-lists. REQUIRES: graph.directed().
Expected<Graph> open_transpose(const Graph& graph);

}  // namespace peregrine::graph
