#include "peregrine/graph/adjacency_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "largest_entry.h"
#include "page_prefaulter.h"
#include "peregrine/util/aligned_buffer.h"

namespace peregrine::graph {
namespace {

constexpr uint64_t kAlign = 4096;     // O_DIRECT alignment good for 512 B and 4 KiB sectors
constexpr unsigned kSubmitBatch = 8;  // reads prepared before an early io_uring_submit
uint64_t align_down(uint64_t x) { return x & ~(kAlign - 1); }
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) & ~(kAlign - 1); }

}  // namespace

// Ascending vertices; next() skips vertices with empty lists (no IO needed).
class AdjacencyReader::Source {
 public:
  virtual ~Source() = default;
  virtual bool next(Vertex* v) = 0;
};

namespace {

class SpanSource : public AdjacencyReader::Source {
 public:
  SpanSource(const Graph& g, std::span<const Vertex> vs) : g_(g), vs_(vs) {}
  bool next(Vertex* v) override {
    while (i_ < vs_.size()) {
      Vertex x = vs_[i_++];
      if (g_.degree(x) > 0) {
        *v = x;
        return true;
      }
    }
    return false;
  }

 private:
  const Graph& g_;
  std::span<const Vertex> vs_;
  size_t i_ = 0;
};

class AllSource : public AdjacencyReader::Source {
 public:
  explicit AllSource(const Graph& g) : g_(g) {}
  bool next(Vertex* v) override {
    while (next_ < g_.num_vertices()) {
      uint64_t x = next_++;
      if (g_.degree(x) > 0) {
        *v = static_cast<Vertex>(x);
        return true;
      }
    }
    return false;
  }

 private:
  const Graph& g_;
  uint64_t next_ = 0;
};

}  // namespace

// One read: an aligned range of the adjacency file and the lists (or the
// part of a long list) in it. Outside the anonymous namespace, as
// AdjacencyReader::Slot holds one.
namespace detail {
struct Extent {
  struct Piece {
    Vertex v;
    uint32_t buf_offset;  // bytes into the read's buffer
    uint32_t count;       // neighbour entries
  };
  uint64_t offset = 0;     // file offset of the read
  uint32_t length = 0;     // aligned read length
  uint32_t needed = 0;     // bytes that must arrive (the end of the last piece)
  bool continues = false;  // the first piece goes on with the previous extent's last list
  std::vector<Piece> pieces;
};
}  // namespace detail

using detail::Extent;

namespace {

// Cuts the source's lists into extents of at most max_io_bytes, taking the
// next list into the same read when the gap to it is small and it fits
// whole; a list longer than one read is cut across several.
class ExtentCutter {
 public:
  ExtentCutter(const Graph& g, AdjacencyReader::Source& source, const ReaderOptions& o)
      : g_(g), source_(source), o_(o) {
    advance();
  }

  // The next extent into *e; false when the source is exhausted.
  bool next(Extent* e) {
    if (!have_pending_) return false;
    e->pieces.clear();
    e->continues = pos_ != g_.offsets[v_] * sizeof(Vertex);
    const uint64_t start = align_down(pos_);
    const uint64_t limit = start + o_.max_io_bytes;
    uint64_t end = start;
    while (true) {
      uint64_t piece_end = std::min(end_, limit);
      e->pieces.push_back(
          {v_, static_cast<uint32_t>(pos_ - start), static_cast<uint32_t>((piece_end - pos_) / sizeof(Vertex))});
      end = piece_end;
      if (piece_end < end_) {  // the list continues in the next extent
        pos_ = piece_end;
        break;
      }
      if (!advance()) break;
      if (pos_ - end > o_.coalesce_gap_bytes || align_up(end_) > limit) break;
    }
    e->offset = start;
    e->length = static_cast<uint32_t>(align_up(end) - start);
    e->needed = static_cast<uint32_t>(end - start);
    return true;
  }

 private:
  bool advance() {
    have_pending_ = source_.next(&v_);
    if (have_pending_) {
      pos_ = g_.offsets[v_] * sizeof(Vertex);
      end_ = g_.offsets[v_ + 1] * sizeof(Vertex);
    }
    return have_pending_;
  }

  const Graph& g_;
  AdjacencyReader::Source& source_;
  const ReaderOptions& o_;
  // The list being cut: its vertex and its bytes not yet in an extent.
  bool have_pending_ = false;
  Vertex v_ = 0;
  uint64_t pos_ = 0;
  uint64_t end_ = 0;
};

// Hands the lists of a completed read to fn (with their weights from
// wbuf to wfn), after checking that every neighbour is a vertex of the
// graph (a corrupt file says so, not crash). Pieces that follow one
// another in the buffer are checked as one run: a read of whole lists is
// one scan, not one per list.
Status deliver(const std::byte* buf, const std::byte* wbuf, const Extent& e, uint64_t n, const std::string& path,
               IoStats& stats, const NeighbourFn* fn, const WeightedNeighbourFn* wfn) {
  const auto& pieces = e.pieces;
  for (size_t first = 0, last = 0; first < pieces.size(); first = last) {
    uint64_t entries = 0;
    for (last = first; last < pieces.size() && pieces[last].buf_offset == pieces[first].buf_offset +
                                                                            entries * sizeof(Vertex);
         ++last)
      entries += pieces[last].count;
    const auto* run = reinterpret_cast<const Vertex*>(buf + pieces[first].buf_offset);
    if (const size_t bad = detail::first_not_below({run, entries}, n); bad < entries) {
      size_t i = first;
      for (uint64_t before = 0; before + pieces[i].count <= bad; ++i) before += pieces[i].count;
      return Status::error(EIO, path + ": corrupt: vertex " + std::to_string(pieces[i].v) + " has neighbour " +
                                    std::to_string(run[bad]) + " >= " + std::to_string(n) + " vertices");
    }
    for (size_t i = first; i < last; ++i) {
      const auto& p = pieces[i];
      const auto* nb = reinterpret_cast<const Vertex*>(buf + p.buf_offset);
      // What the algorithm asked for: the lists, and their weights when read.
      stats.list_bytes +=
          static_cast<uint64_t>(p.count) * (sizeof(Vertex) + (wfn != nullptr ? sizeof(uint32_t) : 0));
      const std::span<const Vertex> neighbours(nb, p.count);
      if (wfn != nullptr)
        (*wfn)(p.v, neighbours,
               std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(wbuf + p.buf_offset), p.count));
      else
        (*fn)(p.v, neighbours);
    }
  }
  return Status::ok();
}

// A read's user data: its slot, and in the low bit whether it is the
// weights' read (slots are aligned, so the bit is free).
constexpr uintptr_t kWeightsRead = 1;

}  // namespace

struct AdjacencyReader::Slot {
  uint64_t seq = 0;          // the extent's place in the order they were cut
  bool undelivered = false;  // cut, and its lists not yet handed to the callback
  Slot* waiter = nullptr;    // the next extent, done and waiting for this one (it goes on with a list)
  AlignedBuffer buf;
  AlignedBuffer wbuf;           // the weights of the same entries (weights only)
  Extent extent;                // the read and the lists it holds
  uint32_t done = 0;            // bytes arrived so far
  uint32_t wdone = 0;           // weight bytes arrived so far
  unsigned reads = 0;           // reads of the extent not finished (1, or 2 with weights)
  int error = 0;                // the first failed read's -errno, or EIO when truncated
  bool weights_failed = false;  // the failure was the weights' read
  unsigned index = 0;           // position in slots_ = registered buffer index (weights: + queue depth)
};

struct AdjacencyReader::Ring {
  io_uring ring{};
  bool ready = false;
  // Registered buffers and file save the kernel pinning pages and looking up
  // the file on every read; both are optional (old kernels, memlock limits).
  bool fixed_buffers = false;
  bool fixed_file = false;
  unsigned slots = 0;  // queue depth: the weights' buffers follow the lists' in the registration
  // Prepares the read of the rest of a slot's extent from the adjacency
  // (fd, fixed file 0) or the weights (fixed file 1). The ring has room for
  // every read: queue_depth entries per file read.
  void prep_read(int fd, Slot& s, bool weights) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    const Extent& e = s.extent;
    const uint32_t done = weights ? s.wdone : s.done;
    std::byte* buf = (weights ? s.wbuf.data() : s.buf.data()) + done;
    if (fixed_file) fd = weights ? 1 : 0;
    if (fixed_buffers)
      io_uring_prep_read_fixed(sqe, fd, buf, e.length - done, e.offset + done,
                               static_cast<int>(weights ? slots + s.index : s.index));
    else
      io_uring_prep_read(sqe, fd, buf, e.length - done, e.offset + done);
    if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&s) | (weights ? kWeightsRead : 0)));
  }
  ~Ring() {
    if (!ready) return;
    // The kernel tears a ring down asynchronously and keeps its registered
    // file open meanwhile, which leaves a just-finished run's filesystem
    // busy for a moment (an unmount right after it fails with EBUSY).
    // Unregistering is synchronous: the file is released before we return.
    if (fixed_file) io_uring_unregister_files(&ring);
    if (fixed_buffers) io_uring_unregister_buffers(&ring);
    io_uring_queue_exit(&ring);
  }
};

Status AdjacencyReader::check_options(const ReaderOptions& o) {
  if (o.queue_depth < 1 || o.queue_depth > 4096)
    return Status::error(EINVAL, "queue depth must be between 1 and 4096, not " + std::to_string(o.queue_depth));
  if (o.max_io_bytes < kAlign || o.max_io_bytes % kAlign != 0 || o.max_io_bytes > (64u << 20))
    return Status::error(EINVAL, "max IO size must be a multiple of 4096 between 4 KiB and 64 MiB, not " +
                                     std::to_string(o.max_io_bytes));
  return Status::ok();
}

namespace {

// Opens a graph file for reading, O_DIRECT if asked and the filesystem
// allows (*direct tells which); -errno on failure.
int open_graph_file(const std::filesystem::path& path, bool* direct) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (*direct ? O_DIRECT : 0));
  if (fd < 0 && *direct && errno == EINVAL) {
    // The filesystem refuses O_DIRECT (old tmpfs, some FUSE mounts): still
    // run, but buffered; callers report direct() so numbers are not misread.
    *direct = false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  return fd < 0 ? -errno : fd;
}

}  // namespace

Expected<std::unique_ptr<AdjacencyReader>> AdjacencyReader::open(const Graph& graph, const ReaderOptions& o) {
  Status st = check_options(o);
  if (!st) return st;
  if (o.weights && !graph.weighted())
    return Status::error(EINVAL, graph.dir.string() +
                                     ": the graph has no weights (not generated with --weighted "
                                     "or imported from a weighted edge list)");
  auto path = graph.adjacency_path();
  bool direct = o.direct;
  int fd = open_graph_file(path, &direct);
  if (fd < 0) return Status::error(-fd, path.string() + ": cannot open: " + std::strerror(-fd));
  std::unique_ptr<AdjacencyReader> r(new AdjacencyReader(graph, o, fd, direct));
  if (o.weights) {
    bool weights_direct = direct;
    r->weights_fd_ = open_graph_file(graph.weights_path(), &weights_direct);
    if (r->weights_fd_ < 0) {
      const int e = -r->weights_fd_;
      return Status::error(e, graph.weights_path().string() + ": cannot open: " + std::strerror(e));
    }
    r->direct_ = direct && weights_direct;  // direct() says whether every read bypasses the page cache
  }
  const unsigned files = o.weights ? 2 : 1;
  int rc = io_uring_queue_init(files * o.queue_depth, &r->ring_->ring, 0);
  if (rc < 0) return Status::error(-rc, std::string("io_uring_queue_init failed: ") + std::strerror(-rc));
  r->ring_->ready = true;
  r->ring_->slots = o.queue_depth;
  for (unsigned i = 0; i < o.queue_depth; ++i) {
    auto s = std::make_unique<Slot>();
    s->buf = AlignedBuffer(o.max_io_bytes, kAlign);
    if (o.weights) s->wbuf = AlignedBuffer(o.max_io_bytes, kAlign);
    s->index = i;
    r->slots_.push_back(std::move(s));
  }
  std::vector<iovec> iovs;
  for (auto& s : r->slots_) iovs.push_back({s->buf.data(), o.max_io_bytes});
  if (o.weights)
    for (auto& s : r->slots_) iovs.push_back({s->wbuf.data(), o.max_io_bytes});
  r->ring_->fixed_buffers =
      io_uring_register_buffers(&r->ring_->ring, iovs.data(), static_cast<unsigned>(iovs.size())) == 0;
  const int fds[2] = {fd, r->weights_fd_};
  r->ring_->fixed_file = io_uring_register_files(&r->ring_->ring, fds, files) == 0;
  return r;
}

struct AdjacencyReader::KeptBuffers {
  AlignedBuffer lists;
  AlignedBuffer weights;
};

AdjacencyReader::AdjacencyReader(const Graph& graph, const ReaderOptions& options, int fd, bool direct)
    : graph_(graph), options_(options), fd_(fd), direct_(direct), ring_(std::make_unique<Ring>()) {}

AdjacencyReader::~AdjacencyReader() {
  ring_.reset();
  ::close(fd_);
  if (weights_fd_ >= 0) ::close(weights_fd_);
}

Status AdjacencyReader::sort_batch(std::vector<Vertex>& vertices) const {
  std::sort(vertices.begin(), vertices.end());
  vertices.erase(std::unique(vertices.begin(), vertices.end()), vertices.end());
  if (!vertices.empty() && vertices.back() >= graph_.num_vertices())
    return Status::error(EINVAL, "vertex " + std::to_string(vertices.back()) + " out of range");
  return Status::ok();
}

Status AdjacencyReader::read_lists(std::vector<Vertex>& vertices, const NeighbourFn& fn) {
  if (Status st = sort_batch(vertices); !st) return st;
  if (Status st = keep_if_fits(); !st) return st;
  if (kept_ready_) {
    serve_kept(vertices, &fn, nullptr);
    return Status::ok();
  }
  SpanSource src(graph_, vertices);
  return run(src, &fn, nullptr);
}

Status AdjacencyReader::read_lists(std::vector<Vertex>& vertices, const WeightedNeighbourFn& fn) {
  if (!reads_weights()) return Status::error(EINVAL, "weights asked of a reader opened without them");
  if (Status st = sort_batch(vertices); !st) return st;
  if (Status st = keep_if_fits(); !st) return st;
  if (kept_ready_) {
    serve_kept(vertices, nullptr, &fn);
    return Status::ok();
  }
  SpanSource src(graph_, vertices);
  return run(src, nullptr, &fn);
}

Status AdjacencyReader::read_all(const NeighbourFn& fn) {
  if (Status st = keep_if_fits(); !st) return st;
  if (kept_ready_) {
    serve_all_kept(&fn, nullptr);
    return Status::ok();
  }
  AllSource src(graph_);
  return run(src, &fn, nullptr);
}

Status AdjacencyReader::read_all(const WeightedNeighbourFn& fn) {
  if (!reads_weights()) return Status::error(EINVAL, "weights asked of a reader opened without them");
  if (Status st = keep_if_fits(); !st) return st;
  if (kept_ready_) {
    serve_all_kept(nullptr, &fn);
    return Status::ok();
  }
  AllSource src(graph_);
  return run(src, nullptr, &fn);
}

uint64_t AdjacencyReader::keep_size() const {
  return graph_.offsets.back() * sizeof(Vertex) * (reads_weights() ? 2 : 1);
}

Status AdjacencyReader::keep_if_fits() {
  if (keep_tried_) return Status::ok();
  keep_tried_ = true;
  if (options_.keep_bytes == 0 || keep_size() > options_.keep_bytes) return Status::ok();
  const uint64_t bytes = graph_.offsets.back() * sizeof(Vertex);
  // Owned by the reader before any read is out: a load that fails with
  // reads still in the kernel leaves the buffers to the reader's end, as
  // run() leaves its slots.
  kept_buffers_ = std::make_unique<KeptBuffers>();
  try {
    kept_buffers_->lists = AlignedBuffer::uninitialised(align_up(bytes), kAlign);
    if (reads_weights()) kept_buffers_->weights = AlignedBuffer::uninitialised(align_up(bytes), kAlign);
  } catch (const std::bad_alloc&) {
    kept_buffers_.reset();  // the budget was more than the machine has: read the file
    return Status::ok();
  }
  const std::string path = graph_.adjacency_path().string();
  const uint64_t n = graph_.num_vertices();
  // The first entry out of range, found as the reads complete.
  constexpr uint64_t kNone = UINT64_MAX;
  uint64_t bad_neighbour = kNone;
  uint64_t bad_weight = kNone;
  {
    // The buffers' pages, faulted in ahead of the reads (page_prefaulter.h).
    std::vector<std::span<std::byte>> fresh{{kept_buffers_->lists.data(), align_up(bytes)}};
    if (reads_weights()) fresh.emplace_back(kept_buffers_->weights.data(), align_up(bytes));
    detail::PagePrefaulter prefaulter(std::move(fresh));
    if (Status st = load_file(fd_, 0, kept_buffers_->lists.data(), bytes, path, n, &bad_neighbour); !st) return st;
    if (reads_weights()) {
      // The kept sssp files a vertex at most max_weight / delta buckets
      // ahead: a weight above the graph's stated largest would be filed in
      // the wrong one.
      if (Status st = load_file(weights_fd_, 1, kept_buffers_->weights.data(), bytes, graph_.weights_path().string(),
                                uint64_t{graph_.meta.max_weight} + 1, &bad_weight);
          !st)
        return st;
    }
  }
  const auto* lists = reinterpret_cast<const Vertex*>(kept_buffers_->lists.data());
  const auto* weights = reinterpret_cast<const uint32_t*>(kept_buffers_->weights.data());
  if (bad_neighbour != kNone) {
    const auto owner = std::upper_bound(graph_.offsets.begin(), graph_.offsets.end(), bad_neighbour) - 1;
    return Status::error(EIO, path + ": corrupt: vertex " + std::to_string(owner - graph_.offsets.begin()) +
                                  " has neighbour " + std::to_string(lists[bad_neighbour]) +
                                  " >= " + std::to_string(n) + " vertices");
  }
  if (bad_weight != kNone)
    return Status::error(EIO, graph_.weights_path().string() + ": corrupt: entry " + std::to_string(bad_weight) +
                                  " weighs " + std::to_string(weights[bad_weight]) + ", above the graph's max_weight " +
                                  std::to_string(graph_.meta.max_weight));
  stats_.list_bytes += keep_size();
  kept_lists_ = lists;
  kept_weight_values_ = weights;
  kept_ready_ = true;
  return Status::ok();
}

Status AdjacencyReader::load_file(int fd, unsigned index, std::byte* dest, uint64_t bytes, const std::string& path,
                                  uint64_t below, uint64_t* first_bad) {
  io_uring* ring = &ring_->ring;
  struct Read {
    uint64_t offset = 0;
    uint32_t length = 0;  // aligned
    uint32_t needed = 0;  // the file's bytes in it
    uint32_t done = 0;
  };
  std::vector<Read> reads(options_.queue_depth);
  std::vector<unsigned> free_reads;
  for (unsigned i = 0; i < options_.queue_depth; ++i) free_reads.push_back(i);
  auto prep = [&](unsigned i) {
    const Read& r = reads[i];
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_read(sqe, ring_->fixed_file ? static_cast<int>(index) : fd, dest + r.offset + r.done,
                       r.length - r.done, r.offset + r.done);
    if (ring_->fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, i);
  };
  // Reads complete but not yet checked: checked after the next reads are
  // out, while their bytes are still in the cache.
  std::vector<std::pair<uint64_t, uint32_t>> unchecked;
  auto check = [&] {
    for (const auto& [offset, length] : unchecked) {
      const auto* entries = reinterpret_cast<const uint32_t*>(dest + offset);
      const size_t count = length / sizeof(uint32_t);
      if (const size_t k = detail::first_not_below({entries, count}, below); k < count)
        *first_bad = std::min(*first_bad, offset / sizeof(uint32_t) + k);
    }
    unchecked.clear();
  };
  uint64_t next = 0;
  unsigned inflight = 0;
  Status error;
  auto fill = [&] {
    while (error.is_ok() && next < bytes && !free_reads.empty()) {
      const unsigned i = free_reads.back();
      free_reads.pop_back();
      Read& r = reads[i];
      r.offset = next;
      r.length = static_cast<uint32_t>(std::min<uint64_t>(options_.max_io_bytes, align_up(bytes) - next));
      r.needed = static_cast<uint32_t>(std::min<uint64_t>(r.length, bytes - next));
      r.done = 0;
      next += r.length;
      prep(i);
      ++inflight;
    }
  };
  while (true) {
    fill();
    if (inflight == 0) break;
    int rc = io_uring_submit_and_wait(ring, 1);
    if (rc < 0 && rc != -EINTR) return Status::error(-rc, path + ": io_uring_submit failed: " + std::strerror(-rc));
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      const auto i = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      Read& r = reads[i];
      const int res = cqe->res;
      ++stats_.reads;
      if (res > 0) {
        r.done += static_cast<uint32_t>(res);
        stats_.bytes += static_cast<uint64_t>(res);
      }
      if (error.is_ok() && (res == -EINTR || res == -EAGAIN || (res > 0 && r.done < r.needed))) {
        prep(i);  // again, or the rest of a short read
        continue;
      }
      if (error.is_ok() && res < 0)
        error = Status::error(
            -res, path + ": read at offset " + std::to_string(r.offset + r.done) + " failed: " + std::strerror(-res));
      else if (error.is_ok() && r.done < r.needed)
        error = Status::error(EIO, path + ": truncated: no data at offset " + std::to_string(r.offset + r.done));
      else if (error.is_ok())
        unchecked.emplace_back(r.offset, r.needed);
      --inflight;
      free_reads.push_back(i);
    }
    io_uring_cq_advance(ring, seen);
    fill();
    if (int rc = io_uring_submit(ring); rc < 0 && rc != -EINTR)
      return Status::error(-rc, path + ": io_uring_submit failed: " + std::strerror(-rc));
    check();
  }
  return error;
}

void AdjacencyReader::serve_kept(std::span<const Vertex> vertices, const NeighbourFn* fn,
                                 const WeightedNeighbourFn* wfn) {
  for (Vertex v : vertices) {
    if (graph_.degree(v) == 0) continue;  // as from the file: no call for an empty list
    if (wfn != nullptr)
      (*wfn)(v, kept_list(v), kept_weights(v));
    else
      (*fn)(v, kept_list(v));
  }
}

void AdjacencyReader::serve_all_kept(const NeighbourFn* fn, const WeightedNeighbourFn* wfn) {
  for (uint64_t v = 0; v < graph_.num_vertices(); ++v) {
    if (graph_.degree(v) == 0) continue;
    if (wfn != nullptr)
      (*wfn)(static_cast<Vertex>(v), kept_list(static_cast<Vertex>(v)), kept_weights(static_cast<Vertex>(v)));
    else
      (*fn)(static_cast<Vertex>(v), kept_list(static_cast<Vertex>(v)));
  }
}

Status AdjacencyReader::run(Source& source, const NeighbourFn* fn, const WeightedNeighbourFn* wfn) {
  io_uring* ring = &ring_->ring;
  const uint64_t n = graph_.num_vertices();
  const std::string path = graph_.adjacency_path().string();
  const bool weights = wfn != nullptr;
  ExtentCutter cutter(graph_, source, options_);

  std::vector<Slot*> free_slots;
  for (auto& s : slots_) {
    s->undelivered = false;  // nothing of a run that ended early is waited for
    s->waiter = nullptr;
    free_slots.push_back(s.get());
  }
  // A list cut over several extents must reach the callback in order, so an
  // extent that goes on with a list waits for the one before it (only
  // then: other reads are delivered as they complete).
  uint64_t next_seq = 0;
  // The slot of extent `seq` if it is still out (looked for only for the
  // rare extent that goes on with a list: a scan of the slots, nothing per
  // read).
  auto undelivered = [&](uint64_t seq) -> Slot* {
    for (auto& s : slots_)
      if (s->undelivered && s->seq == seq) return s.get();
    return nullptr;
  };
  unsigned inflight = 0;     // slots with reads out
  unsigned unsubmitted = 0;  // prepared but not yet handed to the kernel
  bool more = true;
  Status error;
  auto resubmit = [&](Slot& s, bool weights_read) {
    ring_->prep_read(weights_read ? weights_fd_ : fd_, s, weights_read);
    ++unsubmitted;
  };
  auto refill = [&]() {
    while (error.is_ok() && more && !free_slots.empty()) {
      Slot* s = free_slots.back();
      if (!cutter.next(&s->extent)) {
        more = false;
        break;
      }
      free_slots.pop_back();
      s->seq = next_seq++;
      s->undelivered = true;
      s->done = s->wdone = 0;
      s->error = 0;
      s->weights_failed = false;
      s->reads = weights ? 2 : 1;
      resubmit(*s, false);
      if (weights) resubmit(*s, true);
      ++inflight;
    }
  };
  // The error of a slot whose reads all ended, naming the file that failed.
  auto slot_error = [&](const Slot& s) {
    const std::string file = s.weights_failed ? graph_.weights_path().string() : path;
    const uint32_t done = s.weights_failed ? s.wdone : s.done;
    if (s.error == EIO && done < s.extent.needed)
      return Status::error(EIO, file + ": truncated: no data at offset " + std::to_string(s.extent.offset + done));
    return Status::error(
        s.error, file + ": read at offset " + std::to_string(s.extent.offset) + " failed: " + std::strerror(s.error));
  };

  refill();
  while (inflight > 0) {
    int rc = io_uring_submit_and_wait(ring, 1);
    if (rc < 0 && rc != -EINTR) {
      // Without a working ring the in-flight buffers cannot be reclaimed
      // safely; the slots stay owned by the reader until it is destroyed.
      return Status::error(-rc, path + ": io_uring_submit failed: " + std::strerror(-rc));
    }
    if (rc >= 0) unsubmitted = 0;
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      const auto data = reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe));
      const bool weights_read = (data & kWeightsRead) != 0;
      Slot& s = *reinterpret_cast<Slot*>(data & ~kWeightsRead);
      uint32_t& done = weights_read ? s.wdone : s.done;
      const int res = cqe->res;
      ++stats_.reads;
      if (res == -EINTR || res == -EAGAIN) {
        resubmit(s, weights_read);
        continue;
      }
      if (res > 0) {
        done += static_cast<uint32_t>(res);
        stats_.bytes += static_cast<uint64_t>(res);
        if (done < s.extent.needed) {  // short read: ask for the rest
          resubmit(s, weights_read);
          continue;
        }
      }
      if (s.error == 0 && (res < 0 || done < s.extent.needed)) {
        s.error = res < 0 ? -res : EIO;
        s.weights_failed = weights_read;
      }
      if (--s.reads > 0) continue;  // the extent's other read is still out
      if (Slot* before = s.extent.continues ? undelivered(s.seq - 1) : nullptr) {
        before->waiter = &s;
        continue;
      }
      for (Slot* ready = &s; ready != nullptr;) {
        if (!error.is_ok()) {
          // A read after the first error only gives its slot back.
        } else if (ready->error != 0) {
          error = slot_error(*ready);
        } else {
          error = deliver(ready->buf.data(), weights ? ready->wbuf.data() : nullptr, ready->extent, n, path, stats_, fn,
                          wfn);
        }
        ready->undelivered = false;
        --inflight;
        free_slots.push_back(ready);
        ready = std::exchange(ready->waiter, nullptr);
      }
      // Reuse the slot at once and hand reads to the kernel in small
      // groups, so the device is not left idle while the callbacks of a
      // long run of completions execute.
      refill();
      if (unsubmitted >= kSubmitBatch && io_uring_submit(ring) >= 0) unsubmitted = 0;
    }
    io_uring_cq_advance(ring, seen);
  }
  return error;
}

}  // namespace peregrine::graph
