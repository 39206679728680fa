#include "peregrine/graph/csr_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "peregrine/util/full_io.h"

namespace peregrine::graph {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

Expected<uint64_t> parse_u64(const std::map<std::string, std::string>& kv, const std::string& key,
                             const std::string& path) {
  auto it = kv.find(key);
  if (it == kv.end()) return Status::error(EINVAL, path + ": missing key '" + key + "'");
  const std::string& s = it->second;
  uint64_t value = 0;
  int base = 10;
  const char* first = s.data();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    first += 2;
  }
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size() || first == s.data() + s.size())
    return Status::error(EINVAL, path + ": key '" + key + "' has bad value '" + s + "'");
  return value;
}

// Reads exactly `len` bytes at `off` with buffered pread.
Status read_exact(int fd, void* buf, size_t len, uint64_t off, const std::string& path) {
  const ssize_t r = pread_upto(fd, buf, len, off);
  if (r < 0) {
    const int e = static_cast<int>(-r);
    return Status::error(e, path + ": read failed: " + errno_text(e));
  }
  if (static_cast<size_t>(r) < len) return Status::error(EIO, path + ": truncated (unexpected end of file)");
  return Status::ok();
}

Expected<uint64_t> stat_size(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT) return Status::error(e, path.string() + ": missing (no such file)");
    return Status::error(e, path.string() + ": cannot stat: " + errno_text(e));
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

std::string format_meta(const GraphMeta& m) {
  std::ostringstream o;
  auto hex = [](uint32_t x) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", x);
    return std::string(b);
  };
  o << "format_version " << (m.weighted ? kWeightedFormatVersion : kFormatVersion) << "\n";
  o << "source " << (m.imported ? "import" : "kronecker") << "\n";
  o << "directed " << (m.directed ? 1 : 0) << "\n";
  o << "vertices " << m.vertices << "\n";
  o << "edges " << m.edges << "\n";
  o << "adjacency_entries " << m.adjacency_entries << "\n";
  o << "index_file " << kIndexFile << "\n";
  o << "adjacency_file " << kAdjacencyFile << "\n";
  o << "neighbour_bytes 4\n";
  o << "index_crc32c " << hex(m.index_crc32c) << "\n";
  o << "adjacency_crc32c " << hex(m.adjacency_crc32c) << "\n";
  if (m.imported) {
    o << "input_edges " << m.input_edges << "\n";
    o << "self_loops_dropped " << m.self_loops << "\n";
    o << "duplicates_dropped " << m.duplicates << "\n";
  } else {
    o << "scale " << m.scale << "\n";
    o << "edgefactor " << m.edgefactor << "\n";
    o << "seed " << m.seed << "\n";
    o << "sampled_edges " << m.sampled_edges << "\n";
  }
  if (m.has_id_map) {
    o << "id_map_file " << kIdMapFile << "\n";
    o << "id_map_crc32c " << hex(m.id_map_crc32c) << "\n";
  }
  if (m.weighted) {
    o << "weighted 1\n";
    o << "weights_file " << kWeightsFile << "\n";
    o << "weights_crc32c " << hex(m.weights_crc32c) << "\n";
    o << "max_weight " << m.max_weight << "\n";
  }
  if (m.directed) {
    o << "in_index_file " << kInIndexFile << "\n";
    o << "in_adjacency_file " << kInAdjacencyFile << "\n";
    o << "in_index_crc32c " << hex(m.in_index_crc32c) << "\n";
    o << "in_adjacency_crc32c " << hex(m.in_adjacency_crc32c) << "\n";
  }
  return o.str();
}

namespace {

using KeyValues = std::map<std::string, std::string>;

// graph.meta's lines, "key value", LF-ended; '#' starts a comment line.
Expected<KeyValues> read_key_values(const std::string& text, const std::string& path) {
  KeyValues kv;
  std::istringstream in(text);
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r')
      return Status::error(EINVAL, path + ": line " + std::to_string(line_no) +
                                       " ends with a carriage return (CRLF line ends, edited on Windows?); "
                                       "graph.meta must use LF line ends");
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    if (sp == std::string::npos) return Status::error(EINVAL, path + ": malformed line '" + line + "'");
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return kv;
}

struct Field {
  const char* key;
  uint64_t* out;
};

Status read_fields(const KeyValues& kv, const std::string& path, std::initializer_list<Field> fields) {
  for (const auto& f : fields) {
    auto v = parse_u64(kv, f.key, path);
    if (!v) return v.status();
    *f.out = *v;
  }
  return Status::ok();
}

uint32_t crc(uint64_t x) { return static_cast<uint32_t>(x); }

// Where the graph came from (format 2 names it; format 1 graphs are all
// generated) and that origin's own keys.
Status read_origin(const KeyValues& kv, const std::string& path, GraphMeta* m) {
  if (m->format_version >= 2) {
    uint64_t directed = 0;
    if (Status st = read_fields(kv, path, {{"directed", &directed}}); !st) return st;
    if (directed > 1) return Status::error(EINVAL, path + ": directed must be 0 or 1");
    m->directed = directed == 1;
    auto source = kv.find("source");
    if (source == kv.end()) return Status::error(EINVAL, path + ": missing key 'source'");
    if (source->second != "import" && source->second != "kronecker")
      return Status::error(EINVAL, path + ": source must be 'import' or 'kronecker', not '" + source->second + "'");
    m->imported = source->second == "import";
  }
  if (m->imported) {
    return read_fields(kv, path,
                       {{"input_edges", &m->input_edges},
                        {"self_loops_dropped", &m->self_loops},
                        {"duplicates_dropped", &m->duplicates}});
  }
  uint64_t scale = 0, edgefactor = 0;
  Status st = read_fields(
      kv, path,
      {{"scale", &scale}, {"edgefactor", &edgefactor}, {"seed", &m->seed}, {"sampled_edges", &m->sampled_edges}});
  if (!st) return st;
  if (scale > kMaxScale)
    return Status::error(EINVAL, path + ": scale " + std::to_string(scale) + " exceeds the maximum of 32");
  if (m->vertices != (1ULL << scale))
    return Status::error(
        EINVAL, path + ": vertices " + std::to_string(m->vertices) + " does not match scale " + std::to_string(scale));
  m->scale = static_cast<uint32_t>(scale);
  m->edgefactor = static_cast<uint32_t>(edgefactor);
  return Status::ok();
}

// The checksums of the files beside the CSR: the id map's, if any, a
// weighted graph's weights and a directed graph's in-edges.
Status read_side_checksums(const KeyValues& kv, const std::string& path, GraphMeta* m) {
  if (m->format_version >= kWeightedFormatVersion) {
    uint64_t weighted = 0, wc = 0;
    if (Status st = read_fields(kv, path, {{"weighted", &weighted}}); !st) return st;
    if (weighted != 1) return Status::error(EINVAL, path + ": weighted must be 1 in format version 3");
    uint64_t max_weight = 0;
    if (Status st = read_fields(kv, path, {{"weights_crc32c", &wc}, {"max_weight", &max_weight}}); !st) return st;
    if (max_weight > UINT32_MAX) return Status::error(EINVAL, path + ": max_weight must be below 2^32");
    m->weighted = true;
    m->weights_crc32c = crc(wc);
    m->max_weight = static_cast<uint32_t>(max_weight);
  } else if (kv.count("weighted")) {
    return Status::error(EINVAL,
                         path + ": key 'weighted' needs format version 3, not " + std::to_string(m->format_version));
  }
  if (kv.count("id_map_crc32c")) {
    uint64_t c = 0;
    if (Status st = read_fields(kv, path, {{"id_map_crc32c", &c}}); !st) return st;
    m->has_id_map = true;
    m->id_map_crc32c = crc(c);
  }
  if (m->directed) {
    uint64_t ic = 0, ac = 0;
    if (Status st = read_fields(kv, path, {{"in_index_crc32c", &ic}, {"in_adjacency_crc32c", &ac}}); !st) return st;
    m->in_index_crc32c = crc(ic);
    m->in_adjacency_crc32c = crc(ac);
  }
  return Status::ok();
}

}  // namespace

Expected<GraphMeta> parse_meta(const std::string& text, const std::string& path) {
  auto kv = read_key_values(text, path);
  if (!kv) return kv.status();
  // The version first: a future layout may change every other key.
  auto version = parse_u64(*kv, "format_version", path);
  if (!version) return version.status();
  if (*version < kOldestFormatVersion || *version > kWeightedFormatVersion)
    return Status::error(EPROTO, path + ": format version " + std::to_string(*version) +
                                     " is not supported (this build reads versions " +
                                     std::to_string(kOldestFormatVersion) + " to " +
                                     std::to_string(kWeightedFormatVersion) + ")");
  GraphMeta m;
  m.format_version = static_cast<uint32_t>(*version);
  uint64_t index_crc = 0, adj_crc = 0, nbytes = 0;
  Status st = read_fields(*kv, path,
                          {{"vertices", &m.vertices},
                           {"edges", &m.edges},
                           {"adjacency_entries", &m.adjacency_entries},
                           {"neighbour_bytes", &nbytes},
                           {"index_crc32c", &index_crc},
                           {"adjacency_crc32c", &adj_crc}});
  if (!st) return st;
  m.index_crc32c = crc(index_crc);
  m.adjacency_crc32c = crc(adj_crc);
  if (nbytes != 4) return Status::error(EINVAL, path + ": neighbour_bytes must be 4, found " + std::to_string(nbytes));
  if (st = read_origin(*kv, path, &m); !st) return st;
  if (st = read_side_checksums(*kv, path, &m); !st) return st;
  if (m.vertices < 1 || m.vertices > kMaxVertices)
    return Status::error(EINVAL, path + ": vertices must be between 1 and 2^32, not " + std::to_string(m.vertices));
  // Checked before any size is computed from them: a larger count would
  // wrap the expected file sizes (entries * 4 bytes) to what a short or
  // empty file has, and a kernel would index far past its lists.
  if (m.adjacency_entries > kMaxAdjacencyEntries || m.edges > kMaxAdjacencyEntries)
    return Status::error(EINVAL, path + ": edges " + std::to_string(m.edges) + " and adjacency_entries " +
                                     std::to_string(m.adjacency_entries) + " must be at most 2^60");
  if (!m.directed && m.adjacency_entries != 2 * m.edges)
    return Status::error(EINVAL, path + ": adjacency_entries must be twice edges (undirected graph)");
  if (m.directed && m.adjacency_entries != m.edges)
    return Status::error(EINVAL, path + ": adjacency_entries must equal edges (directed graph)");
  return m;
}

Status write_meta(const std::filesystem::path& dir, const GraphMeta& meta) {
  auto tmp = dir / (std::string(kMetaFile) + ".tmp");
  auto final_path = dir / kMetaFile;
  std::string text = format_meta(meta);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error(errno, tmp.string() + ": cannot create: " + errno_text(errno));
  ssize_t w = ::write(fd, text.data(), text.size());
  int e = errno;
  if (w != static_cast<ssize_t>(text.size()) || ::fsync(fd) != 0) {
    ::close(fd);
    return Status::error(w < 0 ? e : EIO, tmp.string() + ": write failed");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0)
    return Status::error(errno, final_path.string() + ": rename failed: " + errno_text(errno));
  return Status::ok();
}

Expected<GraphMeta> read_meta(const std::filesystem::path& dir) {
  auto path = dir / kMetaFile;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Status::error(ENOENT, dir.string() + ": not a graph directory (does not exist or is not a directory)");
  std::ifstream in(path);
  if (!in)
    return Status::error(ENOENT, path.string() + ": missing (no graph here, or `gen` or `import` did not finish)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_meta(ss.str(), path.string());
}

namespace {

// A file that must hold `want` bytes.
Status check_size(const std::filesystem::path& path, uint64_t want) {
  auto size = stat_size(path);
  if (!size) return size.status();
  if (*size != want)
    return Status::error(EIO, path.string() + ": " + (*size < want ? "truncated" : "too long") + ": " +
                                  std::to_string(*size) + " bytes, expected " + std::to_string(want));
  return Status::ok();
}

// Checks the sizes of an index/adjacency pair (and the weights beside the
// out-lists) and loads the index.
Status load_csr_index(Graph& g, const char* index_file) {
  const uint64_t n = g.meta.vertices;
  auto index_path = g.dir / index_file;
  auto adj_path = g.adjacency_path();
  if (Status st = check_size(index_path, (n + 1) * sizeof(uint64_t)); !st) return st;
  if (Status st = check_size(adj_path, g.meta.adjacency_entries * sizeof(Vertex)); !st) return st;
  if (g.weighted()) {
    if (Status st = check_size(g.weights_path(), g.meta.adjacency_entries * sizeof(uint32_t)); !st) return st;
  }

  g.offsets.resize(n + 1);
  int fd = ::open(index_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, index_path.string() + ": cannot open: " + errno_text(errno));
  Status st = read_exact(fd, g.offsets.data(), g.offsets.size() * sizeof(uint64_t), 0, index_path.string());
  ::close(fd);
  if (!st) return st;
  if (g.offsets[0] != 0) return Status::error(EIO, index_path.string() + ": corrupt: first offset is not 0");
  for (uint64_t v = 0; v < n; ++v) {
    if (g.offsets[v + 1] < g.offsets[v])
      return Status::error(EIO, index_path.string() + ": corrupt: offsets decrease at vertex " + std::to_string(v));
  }
  if (g.offsets[n] != g.meta.adjacency_entries)
    return Status::error(EIO, index_path.string() + ": corrupt: last offset " + std::to_string(g.offsets[n]) +
                                  " != adjacency_entries " + std::to_string(g.meta.adjacency_entries));
  return Status::ok();
}

}  // namespace

Expected<Graph> open_graph(const std::filesystem::path& dir) {
  auto meta = read_meta(dir);
  if (!meta) return meta.status();
  Graph g;
  g.dir = dir;
  g.meta = *meta;
  Status st = load_csr_index(g, kIndexFile);
  if (!st) return st;
  return g;
}

Expected<Graph> open_transpose(const Graph& graph) {
  if (!graph.directed())
    return Status::error(EINVAL, graph.dir.string() + ": undirected graph: its in-lists are its out-lists");
  Graph t;
  t.dir = graph.dir;
  t.meta = graph.meta;
  t.adjacency_file = kInAdjacencyFile;
  Status st = load_csr_index(t, kInIndexFile);
  if (!st) return st;
  return t;
}

}  // namespace peregrine::graph
