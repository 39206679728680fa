#include "peregrine/graph/edge_runs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <cerrno>
#include <cstring>

#include "peregrine/graph/file_writer.h"
#include "peregrine/util/full_io.h"
#include "two_halves.h"

namespace peregrine::graph {
namespace {

// The order of the records: by key, then (weighted) by weight, so that the
// first of a key's records carries its smallest weight.
bool before(uint64_t a, uint64_t b) { return a < b; }
bool before(const WeightedKey& a, const WeightedKey& b) {
  return a.key < b.key || (a.key == b.key && a.weight < b.weight);
}

// Sequential reader of one run: a file read through a buffer, or a sorted
// vector kept in memory (the last batch, which need not be written).
template <class Record>
class RunReader {
 public:
  RunReader(std::filesystem::path path, size_t buffer_keys) : path_(std::move(path)), buf_(buffer_keys) {}
  explicit RunReader(std::span<const Record> memory)
      : data_(memory.data()), end_(memory.size()), eof_(true), in_memory_(true) {}
  RunReader(RunReader&& o) noexcept
      : path_(std::move(o.path_)),
        fd_(o.fd_),
        buf_(std::move(o.buf_)),
        data_(o.in_memory_ ? o.data_ : buf_.data()),
        pos_(o.pos_),
        end_(o.end_),
        eof_(o.eof_),
        in_memory_(o.in_memory_),
        punch_(o.punch_),
        offset_(o.offset_) {
    o.fd_ = -1;
  }
  RunReader(const RunReader&) = delete;
  ~RunReader() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status open() {
    if (in_memory_) return Status::ok();
    // Read-write only to punch out what was read (below).
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return Status::error(errno, path_.string() + ": cannot open run: " + std::strerror(errno));
    data_ = buf_.data();
    return Status::ok();
  }
  // Sets *has to false at the end of the run.
  Status next(Record* key, bool* has) {
    if (pos_ == end_) {
      Status st = refill();
      if (!st) return st;
      if (pos_ == end_) {
        *has = false;
        return Status::ok();
      }
    }
    *key = data_[pos_++];
    *has = true;
    return Status::ok();
  }

 private:
  Status refill() {
    if (eof_) return Status::ok();
    pos_ = end_ = 0;
    size_t want = buf_.size() * sizeof(Record);
    const ssize_t r = read_upto(fd_, buf_.data(), want);
    if (r < 0) {
      const int e = static_cast<int>(-r);
      return Status::error(e, path_.string() + ": read failed: " + std::strerror(e));
    }
    const auto got = static_cast<size_t>(r);
    if (got < want) eof_ = true;  // read_upto stops short only at the end
    if (got % sizeof(Record) != 0) return Status::error(EIO, path_.string() + ": run file truncated");
    end_ = got / sizeof(Record);
    // The run is read once: give its space back as the merge goes, so the
    // runs shrink while the CSR files grow (a large import needs the room
    // of its runs, not of runs plus graph). Best effort: a filesystem
    // without hole punching keeps the space until the run is removed.
    if (punch_ && got > 0 &&
        ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_),
                    static_cast<off_t>(got)) != 0)
      punch_ = false;
    offset_ += got;
    return Status::ok();
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<Record> buf_;
  const Record* data_ = nullptr;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  bool in_memory_ = false;
  bool punch_ = true;
  uint64_t offset_ = 0;
};

// Sorts one half of a batch.
void sort_records(std::span<uint64_t> keys) {
  // Boost's spreadsort (a radix/comparison hybrid) sorts 64-bit keys about
  // twice as fast as std::sort; the result is the same.
  boost::sort::spreadsort::integer_sort(keys.begin(), keys.end());
}
void sort_records(std::span<WeightedKey> records) {
  // Spreadsort's radix passes on the key: 1.6 times std::sort's speed on a
  // scale-20 import. It orders by key only (a range it finishes by buckets
  // alone is never compared), so keep_one_per_key() picks the weight.
  boost::sort::spreadsort::integer_sort(
      records.begin(), records.end(), [](const WeightedKey& r, unsigned offset) { return r.key >> offset; },
      [](const WeightedKey& a, const WeightedKey& b) { return a.key < b.key; });
}

// One record per key of a batch sorted by key: the key's first (keys), or
// its lightest (weighted keys). Returns the end of the kept records.
std::span<uint64_t>::iterator keep_one_per_key(std::span<uint64_t> keys) {
  return std::unique(keys.begin(), keys.end());
}
std::span<WeightedKey>::iterator keep_one_per_key(std::span<WeightedKey> records) {
  if (records.empty()) return records.end();
  auto out = records.begin();
  for (auto it = out + 1; it != records.end(); ++it) {
    if (it->key == out->key)
      out->weight = std::min(out->weight, it->weight);
    else
      *++out = *it;
  }
  return out + 1;
}

// sort + one record per key + drop of one half of a batch.
template <class Record>
size_t sort_unique(std::span<Record> records, std::optional<uint64_t> drop) {
  sort_records(records);
  auto end = keep_one_per_key(records);
  // `drop` marks self-loops; it is the largest key, so it sits at the end.
  if (drop && end != records.begin() && record_key(*(end - 1)) == *drop) --end;
  return static_cast<size_t>(end - records.begin());
}

// A batch sorted as two halves (each sorted, unique, without `drop`; a
// small batch is all in `a`), on two threads.
template <class Record>
struct SortedHalves {
  std::span<const Record> a, b;
};

template <class Record>
SortedHalves<Record> sort_unique_halves(std::vector<Record>& records, std::optional<uint64_t> drop, bool two_threads) {
  size_t ends[2] = {0, 0};
  const size_t mid = detail::for_two_halves(std::span<Record>(records), two_threads,
                                            [&](std::span<Record> half, int i) { ends[i] = sort_unique(half, drop); });
  return {std::span<const Record>(records.data(), ends[0]), std::span<const Record>(records.data() + mid, ends[1])};
}

// Streams the union of two sorted unique halves, a key once (with the
// smaller weight when both halves have it), to sink in chunks.
template <class Record, class Sink>
Status merge_halves(const SortedHalves<Record>& h, Sink&& sink) {
  if (h.b.empty()) return sink(h.a);
  if (h.a.empty()) return sink(h.b);
  constexpr size_t kChunk = 32 * 1024;
  std::vector<Record> chunk;
  chunk.reserve(kChunk);
  Status st = Status::ok();
  // The first record of a key is its smallest: later ones are dropped.
  auto put = [&](const Record& r) {
    if (!chunk.empty() && record_key(chunk.back()) == record_key(r)) return;
    if (chunk.size() == kChunk) {
      if (st) st = sink(std::span<const Record>(chunk));
      chunk.clear();
    }
    chunk.push_back(r);
  };
  size_t i = 0, j = 0;
  while (i < h.a.size() || j < h.b.size()) {
    if (j == h.b.size() || (i < h.a.size() && !before(h.b[j], h.a[i])))
      put(h.a[i++]);
    else
      put(h.b[j++]);
  }
  if (st && !chunk.empty()) st = sink(std::span<const Record>(chunk));
  return st;
}

}  // namespace

template <class Record>
Status SortedRuns<Record>::write_run(std::vector<Record>& keys, std::optional<uint64_t> drop) {
  const SortedHalves<Record> halves = sort_unique_halves(keys, drop, two_threads_);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::error(ec.value(), dir_.string() + ": cannot create run directory: " + ec.message());
  auto path = dir_ / ("run-" + std::to_string(runs_.size()) + ".bin");
  auto w = FileWriter::create(path, 1 << 20, /*checksum=*/false);
  if (!w) return w.status();
  uint64_t count = 0;
  Status st = merge_halves(halves, [&](std::span<const Record> chunk) {
    count += chunk.size();
    return w->append(chunk.data(), chunk.size() * sizeof(Record));
  });
  if (!st) return st;
  st = w->finish(sync_);
  if (!st) return st;
  runs_.push_back({path, count});
  total_keys_ += count;
  keys.clear();
  return Status::ok();
}

template <class Record>
Status SortedRuns<Record>::merge(const std::function<Status(std::span<const Record>)>& sink,
                                 const std::function<void(uint64_t, uint64_t)>& progress, std::vector<Record>* tail,
                                 std::optional<uint64_t> drop) const {
  // 256 KiB per run keeps the merge's memory small and its reads large.
  constexpr size_t kReadKeys = 256 * 1024 / sizeof(Record);
  std::vector<RunReader<Record>> readers;
  readers.reserve(runs_.size() + 2);  // + the tail's two halves
  for (const auto& r : runs_) {
    readers.emplace_back(r.path, kReadKeys);
    Status st = readers.back().open();
    if (!st) return st;
  }
  uint64_t total_keys = total_keys_;
  if (tail != nullptr && !tail->empty()) {
    // Its two sorted halves are merged here like two runs.
    const SortedHalves<Record> halves = sort_unique_halves(*tail, drop, two_threads_);
    for (auto half : {halves.a, halves.b}) {
      if (half.empty()) continue;
      readers.emplace_back(half);
      total_keys += half.size();
    }
  }
  // A binary min-heap of (record, run) whose top is replaced in place by the
  // next record of its run: one sift-down per record, not a pop and a push.
  struct Head {
    Record record;
    size_t run;
  };
  auto less = [](const Head& a, const Head& b) {
    return before(a.record, b.record) || (!before(b.record, a.record) && a.run < b.run);
  };
  std::vector<Head> heap;
  heap.reserve(readers.size());
  for (size_t i = 0; i < readers.size(); ++i) {
    Record k;
    bool has;
    Status st = readers[i].next(&k, &has);
    if (!st) return st;
    if (has) heap.push_back({k, i});
  }
  std::make_heap(heap.begin(), heap.end(), [&](const Head& a, const Head& b) { return less(b, a); });
  auto sift_down = [&heap, &less] {
    const size_t n = heap.size();
    size_t at = 0;
    const Head moving = heap[0];
    while (true) {
      size_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && less(heap[child + 1], heap[child])) ++child;
      if (!less(heap[child], moving)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = moving;
  };
  std::vector<Record> out;
  out.reserve(kReadKeys);
  bool have_last = false;
  uint64_t last = 0;
  uint64_t consumed = 0;
  while (!heap.empty()) {
    const Record k = heap.front().record;
    const size_t i = heap.front().run;
    ++consumed;
    if (!have_last || record_key(k) != last) {
      out.push_back(k);
      last = record_key(k);
      have_last = true;
      if (out.size() == kReadKeys) {
        Status st = sink(out);
        if (!st) return st;
        out.clear();
        if (progress) progress(consumed, total_keys);
      }
    }
    Record nk;
    bool has;
    Status st = readers[i].next(&nk, &has);
    if (!st) return st;
    if (has) {
      heap.front() = {nk, i};
    } else {
      heap.front() = heap.back();
      heap.pop_back();
      if (heap.empty()) break;
    }
    sift_down();
  }
  if (!out.empty()) {
    Status st = sink(out);
    if (!st) return st;
  }
  if (progress) progress(total_keys, total_keys);
  return Status::ok();
}

template <class Record>
void SortedRuns<Record>::remove() {
  for (const auto& r : runs_) {
    std::error_code ec;
    std::filesystem::remove(r.path, ec);
  }
  runs_.clear();
  total_keys_ = 0;
  std::error_code ec;
  std::filesystem::remove(dir_, ec);  // only if empty: never someone else's files
}

template class SortedRuns<uint64_t>;
template class SortedRuns<WeightedKey>;

}  // namespace peregrine::graph
