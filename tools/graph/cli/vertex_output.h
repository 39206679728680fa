// --out FILE: an algorithm's per-vertex result as text, one line per vertex
// in ascending order of the user's ids, ids as in the input (IdMap):
//   bfs       vertex depth parent   (-1 -1 if not reached; the root is its own parent)
//   cc        vertex label          (smallest id of the vertex's component)
//   kcore     vertex core
//   pagerank  vertex rank           (%.17g: reads back as the same double)
// Written through a buffer and fsynced. Single-threaded.
#pragma once

#include <filesystem>

#include "peregrine/graph/bfs.h"
#include "peregrine/graph/cc.h"
#include "peregrine/graph/id_map.h"
#include "peregrine/graph/kcore.h"
#include "peregrine/graph/pagerank.h"
#include "peregrine/util/result.h"

namespace peregrine::graph::cli {

Status write_bfs_out(const std::filesystem::path& path, const IdMap& ids, const BfsResult& r);
Status write_cc_out(const std::filesystem::path& path, const IdMap& ids, const CcResult& r);
Status write_kcore_out(const std::filesystem::path& path, const IdMap& ids, const KcoreResult& r);
Status write_pagerank_out(const std::filesystem::path& path, const IdMap& ids, const PagerankResult& r);

}  // namespace peregrine::graph::cli
