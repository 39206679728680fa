#include "peregrine/graph/adjacency_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

struct AdjacencyReader::Ring {
  io_uring ring{};
  bool ready = false;
  // Registered buffers and file save the kernel pinning pages and looking up
  // the file on every read; both are optional (old kernels, memlock limits).
  bool fixed_buffers = false;
  bool fixed_file = false;
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

struct AdjacencyReader::Slot {
  struct Piece {
    Vertex v;
    uint32_t buf_offset;  // bytes into the buffer
    uint32_t count;       // neighbour entries
  };
  AlignedBuffer buf;
  uint64_t offset = 0;  // file offset of the read
  uint32_t length = 0;  // aligned read length
  uint32_t needed = 0;  // bytes that must arrive (the end of the last piece)
  uint32_t done = 0;    // bytes arrived so far
  std::vector<Piece> pieces;
  unsigned index = 0;  // position in slots_ = registered buffer index
};

Status AdjacencyReader::check_options(const ReaderOptions& o) {
  if (o.queue_depth < 1 || o.queue_depth > 4096)
    return Status::error(EINVAL, "queue depth must be between 1 and 4096, not " + std::to_string(o.queue_depth));
  if (o.max_io_bytes < kAlign || o.max_io_bytes % kAlign != 0 || o.max_io_bytes > (64u << 20))
    return Status::error(EINVAL, "max IO size must be a multiple of 4096 between 4 KiB and 64 MiB, not " +
                                     std::to_string(o.max_io_bytes));
  return Status::ok();
}

Expected<std::unique_ptr<AdjacencyReader>> AdjacencyReader::open(const Graph& graph, const ReaderOptions& o) {
  Status st = check_options(o);
  if (!st) return st;
  auto path = graph.adjacency_path();
  bool direct = o.direct;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (fd < 0 && direct && errno == EINVAL) {
    // The filesystem refuses O_DIRECT (old tmpfs, some FUSE mounts): still
    // run, but buffered; callers report direct() so numbers are not misread.
    direct = false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return Status::error(errno, path.string() + ": cannot open: " + std::strerror(errno));
  std::unique_ptr<AdjacencyReader> r(new AdjacencyReader(graph, o, fd, direct));
  int rc = io_uring_queue_init(o.queue_depth, &r->ring_->ring, 0);
  if (rc < 0) return Status::error(-rc, std::string("io_uring_queue_init failed: ") + std::strerror(-rc));
  r->ring_->ready = true;
  for (unsigned i = 0; i < o.queue_depth; ++i) {
    auto s = std::make_unique<Slot>();
    s->buf = AlignedBuffer(o.max_io_bytes, kAlign);
    s->index = i;
    r->slots_.push_back(std::move(s));
  }
  std::vector<iovec> iovs;
  for (auto& s : r->slots_) iovs.push_back({s->buf.data(), o.max_io_bytes});
  r->ring_->fixed_buffers =
      io_uring_register_buffers(&r->ring_->ring, iovs.data(), static_cast<unsigned>(iovs.size())) == 0;
  r->ring_->fixed_file = io_uring_register_files(&r->ring_->ring, &fd, 1) == 0;
  return r;
}

AdjacencyReader::AdjacencyReader(const Graph& graph, const ReaderOptions& options, int fd, bool direct)
    : graph_(graph), options_(options), fd_(fd), direct_(direct), ring_(std::make_unique<Ring>()) {}

AdjacencyReader::~AdjacencyReader() {
  ring_.reset();
  ::close(fd_);
}

Status AdjacencyReader::read_lists(std::vector<Vertex>& vertices, const NeighbourFn& fn) {
  std::sort(vertices.begin(), vertices.end());
  vertices.erase(std::unique(vertices.begin(), vertices.end()), vertices.end());
  if (!vertices.empty() && vertices.back() >= graph_.num_vertices())
    return Status::error(EINVAL, "vertex " + std::to_string(vertices.back()) + " out of range");
  SpanSource src(graph_, vertices);
  return run(src, fn);
}

Status AdjacencyReader::read_all(const NeighbourFn& fn) {
  AllSource src(graph_);
  return run(src, fn);
}

Status AdjacencyReader::run(Source& source, const NeighbourFn& fn) {
  io_uring* ring = &ring_->ring;
  const uint64_t n = graph_.num_vertices();
  const std::string path = graph_.adjacency_path().string();

  // The list being cut into extents: vertex, and its not yet covered bytes.
  bool have_pending = false;
  Vertex pv = 0;
  uint64_t p_pos = 0;
  uint64_t p_end = 0;
  auto advance = [&]() {
    have_pending = source.next(&pv);
    if (have_pending) {
      p_pos = graph_.offsets[pv] * sizeof(Vertex);
      p_end = graph_.offsets[pv + 1] * sizeof(Vertex);
    }
    return have_pending;
  };
  advance();

  // Fills a slot with the next extent; false when the source is exhausted.
  auto fill = [&](Slot& s) {
    if (!have_pending) return false;
    s.pieces.clear();
    const uint64_t start = align_down(p_pos);
    const uint64_t limit = start + options_.max_io_bytes;
    uint64_t end = start;
    while (true) {
      uint64_t piece_end = std::min(p_end, limit);
      s.pieces.push_back(
          {pv, static_cast<uint32_t>(p_pos - start), static_cast<uint32_t>((piece_end - p_pos) / sizeof(Vertex))});
      end = piece_end;
      if (piece_end < p_end) {  // list continues in the next extent
        p_pos = piece_end;
        break;
      }
      if (!advance()) break;
      // Coalesce the next list only if the gap is small and it fits whole.
      if (p_pos - end > options_.coalesce_gap_bytes || align_up(p_end) > limit) break;
    }
    s.offset = start;
    s.length = static_cast<uint32_t>(align_up(end) - start);
    s.needed = static_cast<uint32_t>(end - start);
    s.done = 0;
    return true;
  };

  auto submit_read = [&](Slot& s) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    // The ring has queue_depth entries and at most queue_depth reads exist.
    const int fd = ring_->fixed_file ? 0 : fd_;
    if (ring_->fixed_buffers)
      io_uring_prep_read_fixed(sqe, fd, s.buf.data() + s.done, s.length - s.done, s.offset + s.done,
                               static_cast<int>(s.index));
    else
      io_uring_prep_read(sqe, fd, s.buf.data() + s.done, s.length - s.done, s.offset + s.done);
    if (ring_->fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data(sqe, &s);
  };

  std::vector<Slot*> free_slots;
  for (auto& s : slots_) free_slots.push_back(s.get());
  unsigned inflight = 0;
  unsigned unsubmitted = 0;  // prepared but not yet handed to the kernel
  bool more = true;
  Status error;

  auto refill = [&]() {
    while (error.is_ok() && more && !free_slots.empty()) {
      Slot* s = free_slots.back();
      if (!fill(*s)) {
        more = false;
        break;
      }
      free_slots.pop_back();
      submit_read(*s);
      ++inflight;
      ++unsubmitted;
    }
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
      Slot& s = *static_cast<Slot*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      ++stats_.reads;
      if (res == -EINTR || res == -EAGAIN) {
        submit_read(s);
        ++unsubmitted;
        continue;
      }
      if (res < 0) {
        if (error.is_ok())
          error = Status::error(
              -res, path + ": read at offset " + std::to_string(s.offset) + " failed: " + std::strerror(-res));
      } else if (res == 0 && s.done < s.needed) {
        if (error.is_ok())
          error = Status::error(EIO, path + ": truncated: no data at offset " + std::to_string(s.offset + s.done));
      } else {
        s.done += static_cast<uint32_t>(res);
        stats_.bytes += static_cast<uint64_t>(res);
        if (s.done < s.needed) {  // short read: ask for the rest
          submit_read(s);
          ++unsubmitted;
          continue;
        }
        if (error.is_ok()) {
          for (const auto& p : s.pieces) {
            const auto* nb = reinterpret_cast<const Vertex*>(s.buf.data() + p.buf_offset);
            for (uint32_t i = 0; i < p.count; ++i) {
              if (nb[i] >= n) {
                error = Status::error(EIO, path + ": corrupt: vertex " + std::to_string(p.v) + " has neighbour " +
                                               std::to_string(nb[i]) + " >= " + std::to_string(n) + " vertices");
                break;
              }
            }
            if (!error.is_ok()) break;
            stats_.list_bytes += static_cast<uint64_t>(p.count) * sizeof(Vertex);
            fn(p.v, std::span<const Vertex>(nb, p.count));
          }
        }
      }
      --inflight;
      free_slots.push_back(&s);
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
