#include "vertex_output.h"

#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>

#include "peregrine/graph/file_writer.h"

namespace peregrine::graph::cli {
namespace {

static_assert(std::endian::native == std::endian::little, "binary --out is written as little-endian");

// One record: text fields separated by spaces and ended by '\n', or raw
// 8-byte little-endian values.
class Record {
 public:
  explicit Record(OutFormat f) : text_(f == OutFormat::kText) {}
  Record& u(uint64_t x) { return text_ ? put_text(x) : put_raw(x); }
  Record& i(int64_t x) { return text_ ? put_text(x) : put_raw(x); }
  Record& d(double x) {
    if (!text_) return put_raw(x);
    sep();
    len_ += static_cast<size_t>(std::snprintf(buf_ + len_, sizeof buf_ - len_, "%.17g", x));
    return *this;
  }
  std::string_view done() {
    if (text_) buf_[len_++] = '\n';
    std::string_view r(buf_, len_);
    len_ = 0;
    return r;
  }

 private:
  template <typename T>
  Record& put_text(T x) {
    sep();
    auto r = std::to_chars(buf_ + len_, buf_ + sizeof buf_, x);
    len_ = static_cast<size_t>(r.ptr - buf_);
    return *this;
  }
  template <typename T>
  Record& put_raw(T x) {
    static_assert(sizeof(T) == 8);
    std::memcpy(buf_ + len_, &x, 8);
    len_ += 8;
    return *this;
  }
  void sep() {
    if (len_ > 0) buf_[len_++] = ' ';
  }
  bool text_;
  char buf_[96];
  size_t len_ = 0;
};

Status write_records(const std::filesystem::path& path, uint64_t n,
                     const std::function<std::string_view(uint64_t)>& record) {
  auto w = FileWriter::create(path);
  if (!w) return w.status();
  for (uint64_t v = 0; v < n; ++v) {
    std::string_view l = record(v);
    Status st = w->append(l.data(), l.size());
    if (!st) return st;
  }
  return w->finish();
}

}  // namespace

std::optional<OutFormat> parse_out_format(std::string_view name) {
  if (name == "text") return OutFormat::kText;
  if (name == "bin") return OutFormat::kBinary;
  return std::nullopt;
}

Status write_bfs_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const BfsResult& r) {
  Record rec(f);
  return write_records(path, r.parent.size(), [&](uint64_t v) {
    rec.u(ids.user_id(v));
    if (r.parent[v] < 0) return rec.i(-1).i(-1).done();
    return rec.i(r.depth[v]).u(ids.user_id(static_cast<uint64_t>(r.parent[v]))).done();
  });
}

Status write_sssp_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const SsspResult& r) {
  Record rec(f);
  return write_records(path, r.distance.size(), [&](uint64_t v) {
    rec.u(ids.user_id(v));
    return (r.distance[v] == SsspResult::kUnreached ? rec.i(-1) : rec.i(static_cast<int64_t>(r.distance[v]))).done();
  });
}

Status write_cc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const CcResult& r) {
  Record rec(f);
  return write_records(path, r.label.size(),
                       [&](uint64_t v) { return rec.u(ids.user_id(v)).u(ids.user_id(r.label[v])).done(); });
}

Status write_kcore_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const KcoreResult& r) {
  Record rec(f);
  return write_records(path, r.core.size(), [&](uint64_t v) { return rec.u(ids.user_id(v)).u(r.core[v]).done(); });
}

Status write_pagerank_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const PagerankResult& r) {
  Record rec(f);
  return write_records(path, r.rank.size(), [&](uint64_t v) { return rec.u(ids.user_id(v)).d(r.rank[v]).done(); });
}

Status write_bc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const BcResult& r) {
  Record rec(f);
  return write_records(path, r.score.size(), [&](uint64_t v) { return rec.u(ids.user_id(v)).d(r.score[v]).done(); });
}

Status write_tc_out(const std::filesystem::path& path, OutFormat f, const IdMap& ids, const TcResult& r) {
  Record rec(f);
  return write_records(path, r.per_vertex.size(),
                       [&](uint64_t v) { return rec.u(ids.user_id(v)).u(r.per_vertex[v]).done(); });
}

}  // namespace peregrine::graph::cli
