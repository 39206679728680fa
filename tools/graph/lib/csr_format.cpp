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
  auto* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t r = ::pread(fd, p, len, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::error(errno, path + ": read failed: " + errno_text(errno));
    }
    if (r == 0) return Status::error(EIO, path + ": truncated (unexpected end of file)");
    p += r;
    len -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return Status::ok();
}

Expected<uint64_t> stat_size(const std::filesystem::path& path) {
  struct stat st{};
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
  char crc[16];
  o << "format_version " << m.format_version << "\n";
  o << "scale " << m.scale << "\n";
  o << "edgefactor " << m.edgefactor << "\n";
  o << "seed " << m.seed << "\n";
  o << "vertices " << m.vertices << "\n";
  o << "sampled_edges " << m.sampled_edges << "\n";
  o << "edges " << m.edges << "\n";
  o << "adjacency_entries " << m.adjacency_entries << "\n";
  o << "index_file " << kIndexFile << "\n";
  o << "adjacency_file " << kAdjacencyFile << "\n";
  o << "neighbour_bytes 4\n";
  std::snprintf(crc, sizeof crc, "0x%08x", m.index_crc32c);
  o << "index_crc32c " << crc << "\n";
  std::snprintf(crc, sizeof crc, "0x%08x", m.adjacency_crc32c);
  o << "adjacency_crc32c " << crc << "\n";
  return o.str();
}

Expected<GraphMeta> parse_meta(const std::string& text, const std::string& path) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    if (sp == std::string::npos) return Status::error(EINVAL, path + ": malformed line '" + line + "'");
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  // The version first: a future layout may change every other key.
  auto version = parse_u64(kv, "format_version", path);
  if (!version) return version.status();
  if (*version != kFormatVersion)
    return Status::error(EPROTO, path + ": format version " + std::to_string(*version) +
                                     " is not supported (this build reads version " +
                                     std::to_string(kFormatVersion) + ")");
  GraphMeta m;
  m.format_version = static_cast<uint32_t>(*version);
  struct Field {
    const char* key;
    uint64_t* out;
  };
  uint64_t scale = 0, edgefactor = 0, index_crc = 0, adj_crc = 0, nbytes = 0;
  Field fields[] = {{"scale", &scale},
                    {"edgefactor", &edgefactor},
                    {"seed", &m.seed},
                    {"vertices", &m.vertices},
                    {"sampled_edges", &m.sampled_edges},
                    {"edges", &m.edges},
                    {"adjacency_entries", &m.adjacency_entries},
                    {"neighbour_bytes", &nbytes},
                    {"index_crc32c", &index_crc},
                    {"adjacency_crc32c", &adj_crc}};
  for (auto& f : fields) {
    auto v = parse_u64(kv, f.key, path);
    if (!v) return v.status();
    *f.out = *v;
  }
  if (nbytes != 4) return Status::error(EINVAL, path + ": neighbour_bytes must be 4, found " + std::to_string(nbytes));
  if (scale > kMaxScale)
    return Status::error(EINVAL, path + ": scale " + std::to_string(scale) + " exceeds the maximum of 32");
  if (m.vertices != (1ULL << scale))
    return Status::error(EINVAL, path + ": vertices " + std::to_string(m.vertices) + " does not match scale " +
                                     std::to_string(scale));
  if (m.adjacency_entries != 2 * m.edges)
    return Status::error(EINVAL, path + ": adjacency_entries must be twice edges");
  m.scale = static_cast<uint32_t>(scale);
  m.edgefactor = static_cast<uint32_t>(edgefactor);
  m.index_crc32c = static_cast<uint32_t>(index_crc);
  m.adjacency_crc32c = static_cast<uint32_t>(adj_crc);
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
    return Status::error(ENOENT, path.string() + ": missing (no graph here, or `gen` did not finish)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_meta(ss.str(), path.string());
}

Expected<Graph> open_graph(const std::filesystem::path& dir) {
  auto meta = read_meta(dir);
  if (!meta) return meta.status();
  Graph g;
  g.dir = dir;
  g.meta = *meta;
  const uint64_t n = g.meta.vertices;

  auto index_path = dir / kIndexFile;
  auto adj_path = dir / kAdjacencyFile;
  auto isize = stat_size(index_path);
  if (!isize) return isize.status();
  uint64_t want = (n + 1) * sizeof(uint64_t);
  if (*isize != want)
    return Status::error(EIO, index_path.string() + ": " + (*isize < want ? "truncated" : "too long") + ": " +
                                  std::to_string(*isize) + " bytes, expected " + std::to_string(want));
  auto asize = stat_size(adj_path);
  if (!asize) return asize.status();
  want = g.meta.adjacency_entries * sizeof(Vertex);
  if (*asize != want)
    return Status::error(EIO, adj_path.string() + ": " + (*asize < want ? "truncated" : "too long") + ": " +
                                  std::to_string(*asize) + " bytes, expected " + std::to_string(want));

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
  return g;
}

}  // namespace peregrine::graph
