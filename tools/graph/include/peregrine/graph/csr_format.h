// The on-disk CSR graph (docs/graph.md, "On-disk format") and opening it.
//
// A graph directory holds three files:
//   graph.meta     text, one "key value" per line; written last, so a graph
//                  without it is an unfinished one;
//   index.u64      n+1 little-endian uint64 offsets, counted in neighbour
//                  entries: the list of v is entries [index[v], index[v+1]);
//   adjacency.u32  little-endian uint32 neighbour ids, each list ascending.
// open_graph() checks everything that is cheap (version, file sizes, the
// offsets) and loads the index into memory: the vertex side of a
// semi-external algorithm. A Graph is immutable once opened and may be read
// from any number of threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::graph {

using Vertex = uint32_t;  // scale <= 32, so a neighbour id fits 4 bytes

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kMaxScale = 32;
inline constexpr const char* kMetaFile = "graph.meta";
inline constexpr const char* kIndexFile = "index.u64";
inline constexpr const char* kAdjacencyFile = "adjacency.u32";

struct GraphMeta {
  uint32_t format_version = kFormatVersion;
  uint32_t scale = 0;
  uint32_t edgefactor = 0;
  uint64_t seed = 0;
  uint64_t vertices = 0;           // 2^scale
  uint64_t sampled_edges = 0;      // edgefactor * 2^scale Kronecker samples
  uint64_t edges = 0;              // undirected edges kept (no loops, no duplicates)
  uint64_t adjacency_entries = 0;  // 2 * edges: both directions are stored
  uint32_t index_crc32c = 0;
  uint32_t adjacency_crc32c = 0;
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
  std::vector<uint64_t> offsets;  // n+1 entries, from index.u64

  uint64_t num_vertices() const { return meta.vertices; }
  uint64_t degree(uint64_t v) const { return offsets[v + 1] - offsets[v]; }
  std::filesystem::path adjacency_path() const { return dir / kAdjacencyFile; }
};

// Opens DIR: parses graph.meta, checks the format version, both file sizes
// and that the offsets start at 0, never decrease and end at the entry count.
Expected<Graph> open_graph(const std::filesystem::path& dir);

}  // namespace peregrine::graph
