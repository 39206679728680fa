#include "vertex_output.h"

#include <charconv>
#include <cstdio>
#include <functional>

#include "peregrine/graph/file_writer.h"

namespace peregrine::graph::cli {
namespace {

// Appends numbers and separators to a line buffer.
class Line {
 public:
  Line& u(uint64_t x) { return put(x); }
  Line& i(int64_t x) { return put(x); }
  Line& d(double x) {
    sep();
    len_ += static_cast<size_t>(std::snprintf(buf_ + len_, sizeof buf_ - len_, "%.17g", x));
    return *this;
  }
  std::string_view done() {
    buf_[len_++] = '\n';
    return {buf_, len_};
  }

 private:
  template <typename T>
  Line& put(T x) {
    sep();
    auto r = std::to_chars(buf_ + len_, buf_ + sizeof buf_, x);
    len_ = static_cast<size_t>(r.ptr - buf_);
    return *this;
  }
  void sep() {
    if (len_ > 0) buf_[len_++] = ' ';
  }
  char buf_[96];
  size_t len_ = 0;
};

Status write_lines(const std::filesystem::path& path, uint64_t n, const std::function<std::string_view(uint64_t)>& line) {
  auto w = FileWriter::create(path);
  if (!w) return w.status();
  for (uint64_t v = 0; v < n; ++v) {
    std::string_view l = line(v);
    Status st = w->append(l.data(), l.size());
    if (!st) return st;
  }
  return w->finish();
}

}  // namespace

Status write_bfs_out(const std::filesystem::path& path, const IdMap& ids, const BfsResult& r) {
  Line l;
  return write_lines(path, r.parent.size(), [&](uint64_t v) {
    l = Line();
    l.u(ids.user_id(v));
    if (r.parent[v] < 0) return l.i(-1).i(-1).done();
    return l.u(r.depth[v]).u(ids.user_id(static_cast<uint64_t>(r.parent[v]))).done();
  });
}

Status write_cc_out(const std::filesystem::path& path, const IdMap& ids, const CcResult& r) {
  Line l;
  return write_lines(path, r.label.size(), [&](uint64_t v) {
    l = Line();
    return l.u(ids.user_id(v)).u(ids.user_id(r.label[v])).done();
  });
}

Status write_kcore_out(const std::filesystem::path& path, const IdMap& ids, const KcoreResult& r) {
  Line l;
  return write_lines(path, r.core.size(), [&](uint64_t v) {
    l = Line();
    return l.u(ids.user_id(v)).u(r.core[v]).done();
  });
}

Status write_pagerank_out(const std::filesystem::path& path, const IdMap& ids, const PagerankResult& r) {
  Line l;
  return write_lines(path, r.rank.size(), [&](uint64_t v) {
    l = Line();
    return l.u(ids.user_id(v)).d(r.rank[v]).done();
  });
}

}  // namespace peregrine::graph::cli
