// --out FILE: an algorithm's per-vertex result, one record per vertex in
// ascending order of the user's ids, ids as in the input (IdMap).
// Text (the default), one line per vertex, fields separated by a space:
//   bfs       vertex depth parent   (-1 -1 if not reached; the root is its own parent)
//   sssp      vertex distance       (-1 if not reached)
//   cc        vertex label          (smallest id of the vertex's component)
//   kcore     vertex core
//   pagerank  vertex rank           (%.17g: reads back as the same double)
//   tc        vertex triangles      (triangles the vertex is a corner of)
//   bc        vertex score          (%.17g, as pagerank)
// Binary (--out-format bin): the same fields as little-endian 8-byte values,
// uint64 vertex, then int64 depth and parent / int64 distance / uint64 label / uint64 core /
// IEEE-754 double rank / uint64 triangles / double score; no header, no
// padding.
// Written through a buffer and fsynced.
// Thread rules: single-threaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "peregrine/graph/bc.h"
#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/graph/sssp.h"
#include "peregrine/graph/tc.h"
#include "peregrine/util/result.h"

namespace peregrine::graph::cli {

enum class OutFormat { kText, kBinary };
// "text" or "bin"; nullopt otherwise.
std::optional<OutFormat> parse_out_format(std::string_view name);

Status write_bfs_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const BfsResult& r);
Status write_sssp_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const SsspResult& r);
Status write_cc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const CcResult& r);
Status write_kcore_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const KcoreResult& r);
Status write_pagerank_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const PagerankResult& r);
Status write_bc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const BcResult& r);
Status write_tc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const TcResult& r);

}  // namespace peregrine::graph::cli
