#include "peregrine/volume/member_copy.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "member_refusal.h"
#include "member_zero.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/crc32c.h"
#include "peregrine/util/round.h"

namespace peregrine {
namespace {

constexpr uint64_t kAlign = 4096;

bool all_zero(const std::byte* p, size_t n) {
  // First byte zero and the buffer equal to itself shifted by one: all zero.
  return n == 0 || (p[0] == std::byte{0} && std::memcmp(p, p + 1, n - 1) == 0);
}

// One read (and, when `write_fd` is open, one write of the same bytes to
// the same offset) per job, `depth` jobs in flight on one io_uring ring.
struct Job {
  uint64_t offset = 0;
  uint32_t length = 0;
  size_t tag = 0;  // the caller's index
};

class Pipeline {
 public:
  // on_read(job, bytes): checks or records what was read; an error stops
  // the run (after the IO in flight has finished).
  using OnRead = std::function<Status(const Job&, std::span<const std::byte>)>;

  Pipeline(const MemberFile& reader, const MemberFile* writer, uint32_t chunk, uint32_t depth)
      : reader_(reader), writer_(writer), chunk_(chunk), depth_(std::max<uint32_t>(depth, 1)) {}

  Status run(const std::vector<Job>& jobs, const OnRead& on_read, const std::function<void(uint64_t)>& on_done) {
    if (jobs.empty()) return Status::ok();
    // tmpfs cannot do IO without blocking: io_uring would hand every chunk
    // to a kernel worker, and those memory copies contend with each other;
    // plain system calls in this thread are faster there.
    // A writer under a test's power-cut layer takes it one write at a time.
    if (reader_.info().memory_backed ||
        (writer_ != nullptr && (writer_->info().memory_backed || writer_->writes_routed())))
      return run_synchronously(jobs, on_read, on_done);
    io_uring ring{};
    if (int rc = io_uring_queue_init(depth_ * 2, &ring, 0); rc < 0)
      return Status::error(-rc, std::string("cannot set up io_uring for the copy: ") + std::strerror(-rc));
    std::vector<Slot> slots(std::min<size_t>(depth_, jobs.size()));
    for (Slot& s : slots) s.buf = AlignedBuffer(chunk_);
    size_t next = 0, in_flight = 0;
    Status result = Status::ok();

    auto submit = [&](size_t i) {
      Slot& s = slots[i];
      const Job& j = jobs[s.job];
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never null: at most depth_ IOs for 2 x depth_ entries
      if (s.writing)
        io_uring_prep_write(sqe, writer_->fd(), s.buf.data() + s.done, j.length - s.done, j.offset + s.done);
      else
        io_uring_prep_read(sqe, reader_.fd(), s.buf.data() + s.done, j.length - s.done, j.offset + s.done);
      io_uring_sqe_set_data64(sqe, i);
      ++in_flight;
    };
    auto start = [&](size_t i) {
      if (next >= jobs.size() || !result) return;
      slots[i] = Slot{std::move(slots[i].buf), next++, 0, false};
      submit(i);
    };
    for (size_t i = 0; i < slots.size(); ++i) start(i);

    while (in_flight > 0) {
      io_uring_cqe* cqe = nullptr;
      int rc = io_uring_submit_and_wait(&ring, 1);
      if (rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) rc = io_uring_wait_cqe(&ring, &cqe);
      if (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY) continue;
      if (rc < 0) {
        // The ring is broken with IO in flight that reads or writes our
        // buffers: returning would free them under the kernel.
        std::fprintf(stderr, "peregrine: io_uring failed during a member copy: %s\n", std::strerror(-rc));
        std::abort();
      }
      const size_t i = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring, cqe);
      --in_flight;
      Slot& s = slots[i];
      const Job& j = jobs[s.job];
      const MemberFile& m = s.writing ? *writer_ : reader_;
      if (res <= 0) {
        // 0: the member ended early (a read past its end).
        if (result) result = member_io_error(m, s.writing ? "write" : "read", j.offset + s.done, res == 0 ? EIO : -res);
        continue;
      }
      s.done += static_cast<uint32_t>(res);
      if (s.done < j.length) {  // a short transfer: ask for the rest
        if (result) submit(i);
        continue;
      }
      if (!s.writing) {
        if (result)
          if (Status st = on_read(j, {s.buf.data(), j.length}); !st) result = st;
        if (writer_ != nullptr && result) {
          s.writing = true;
          s.done = 0;
          submit(i);
          continue;
        }
      }
      if (result) on_done(j.length);
      start(i);
    }
    io_uring_queue_exit(&ring);
    return result;
  }

 private:
  Status run_synchronously(const std::vector<Job>& jobs, const OnRead& on_read,
                           const std::function<void(uint64_t)>& on_done) {
    AlignedBuffer buf(chunk_);
    for (const Job& j : jobs) {
      if (int rc = reader_.pread_full(buf.data(), j.length, j.offset); rc < 0)
        return member_io_error(reader_, "read", j.offset, -rc);
      if (Status s = on_read(j, {buf.data(), j.length}); !s) return s;
      if (writer_ != nullptr)
        if (int rc = writer_->pwrite_full(buf.data(), j.length, j.offset); rc < 0)
          return member_io_error(*writer_, "write", j.offset, -rc);
      on_done(j.length);
    }
    return Status::ok();
  }

  struct Slot {
    AlignedBuffer buf;
    size_t job = 0;
    uint32_t done = 0;  // bytes of the current read or write transferred
    bool writing = false;
  };

  const MemberFile& reader_;
  const MemberFile* writer_;
  uint32_t chunk_;
  uint32_t depth_;
};

}  // namespace

Expected<std::vector<CopyRange>> data_segments(const MemberFile& member, uint64_t begin, uint64_t end) {
  std::vector<CopyRange> out;
  if (begin >= end) return out;
  if (member.info().is_block_device) {
    out.push_back({begin, end});
    return out;
  }
  uint64_t pos = begin;
  while (pos < end) {
    off_t d = ::lseek(member.fd(), static_cast<off_t>(pos), SEEK_DATA);
    if (d < 0) {
      if (errno == ENXIO) break;                     // only a hole up to the end of the file
      if (errno == EINVAL || errno == EOPNOTSUPP) {  // cannot tell: all data
        out.push_back({pos, end});
        break;
      }
      return Status::error(errno, "member " + member.info().path + ": cannot look for data at offset " +
                                      std::to_string(pos) + ": " + std::strerror(errno));
    }
    uint64_t data = std::max(pos, round_down(static_cast<uint64_t>(d), kAlign));
    if (data >= end) break;
    off_t h = ::lseek(member.fd(), static_cast<off_t>(data), SEEK_HOLE);
    uint64_t hole = h < 0 ? end : std::min(end, round_up(static_cast<uint64_t>(h), kAlign));
    if (!out.empty() && out.back().end >= data)
      out.back().end = hole;
    else
      out.push_back({data, hole});
    pos = hole;
  }
  return out;
}

MemberCopy::MemberCopy(const MemberFile& from, const MemberFile& to, CopyTuning tuning)
    : from_(from), to_(to), tuning_(tuning) {
  tuning_.chunk_bytes = std::max<uint32_t>(static_cast<uint32_t>(round_down(tuning_.chunk_bytes, kAlign)), kAlign);
}

void MemberCopy::add_data(uint64_t begin, uint64_t end) {
  // Chunks on a grid of chunk_bytes, so that the IOs of a large member are
  // aligned to the chunk size whatever the ranges' starts.
  const uint64_t chunk = tuning_.chunk_bytes;
  for (uint64_t off = begin; off < end;) {
    uint64_t stop = std::min(end, (off / chunk + 1) * chunk);
    pieces_.push_back({off, static_cast<uint32_t>(stop - off), 0});
    data_bytes_ += stop - off;
    off = stop;
  }
}

Status MemberCopy::plan(std::span<const CopyRange> ranges) {
  for (const CopyRange& r : ranges) {
    if (r.begin % kAlign != 0 || r.end % kAlign != 0 || r.begin > r.end)
      return Status::error(EINVAL, "internal: copy range not aligned to 4 KiB");
    auto data = data_segments(from_, r.begin, r.end);
    if (!data) return data.status();
    uint64_t pos = r.begin;
    for (const CopyRange& d : *data) {
      if (d.begin > pos) holes_.push_back({pos, d.begin});
      add_data(d.begin, d.end);
      pos = d.end;
    }
    if (pos < r.end) holes_.push_back({pos, r.end});
  }
  for (const CopyRange& h : holes_) hole_bytes_ += h.end - h.begin;
  return Status::ok();
}

Status MemberCopy::copy(std::span<const CopyRange> ranges, const CopyProgressFn& progress) {
  return read_source(ranges, true, progress);
}

Status MemberCopy::checksum(std::span<const CopyRange> ranges, const CopyProgressFn& progress) {
  return read_source(ranges, false, progress);
}

Status MemberCopy::read_source(std::span<const CopyRange> ranges, bool write, const CopyProgressFn& progress) {
  pieces_.clear();
  holes_.clear();
  data_bytes_ = hole_bytes_ = 0;
  copied_ = false;
  if (Status s = plan(ranges); !s) return s;
  if (write && !holes_.empty()) {
    // Written only where NEW can zero nothing in place (mkfs's helper).
    AlignedBuffer zeros(1 << 20);
    for (const CopyRange& h : holes_)
      if (Status s = zero_member_range(to_, h.begin, h.end, zeros); !s) return s;
  }
  const uint64_t total = data_bytes_;
  uint64_t done = 0;
  if (progress) progress(0, total);

  std::vector<Job> jobs;
  jobs.reserve(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) jobs.push_back({pieces_[i].offset, pieces_[i].length, i});
  Pipeline p(from_, write ? &to_ : nullptr, tuning_.chunk_bytes, tuning_.chunks_in_flight);
  Status s = p.run(
      jobs,
      [&](const Job& j, std::span<const std::byte> bytes) {
        pieces_[j.tag].crc = crc32c(bytes);
        return Status::ok();
      },
      [&](uint64_t n) {
        done += n;
        if (progress) progress(done, total);
      });
  copied_ = s.is_ok();
  return s;
}

Status MemberCopy::verify(const CopyProgressFn& progress) {
  if (!copied_) return Status::error(EINVAL, "internal: verify before a complete copy");
  std::vector<Job> jobs;
  jobs.reserve(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) jobs.push_back({pieces_[i].offset, pieces_[i].length, i});
  // Holes: only what the target holds as data there is read (all of it on
  // a device); a hole it kept reads as zeros by definition.
  constexpr size_t kHoleTag = SIZE_MAX;
  for (const CopyRange& h : holes_) {
    auto data = data_segments(to_, h.begin, h.end);
    if (!data) return data.status();
    for (const CopyRange& d : *data)
      for (uint64_t off = d.begin; off < d.end;) {
        uint64_t stop = std::min<uint64_t>(d.end, off + tuning_.chunk_bytes);
        jobs.push_back({off, static_cast<uint32_t>(stop - off), kHoleTag});
        off = stop;
      }
  }
  uint64_t total = 0, done = 0;
  for (const Job& j : jobs) total += j.length;
  if (progress) progress(0, total);
  Pipeline p(to_, nullptr, tuning_.chunk_bytes, tuning_.chunks_in_flight);
  return p.run(
      jobs,
      [&](const Job& j, std::span<const std::byte> bytes) {
        if (j.tag == kHoleTag ? !all_zero(bytes.data(), bytes.size()) : crc32c(bytes) != pieces_[j.tag].crc)
          return Status::error(EBADMSG, "member " + to_.info().path +
                                            ": the copy does not read back as written at offset " +
                                            std::to_string(j.offset) + " (" + std::to_string(j.length) +
                                            " bytes differ from the source)");
        return Status::ok();
      },
      [&](uint64_t n) {
        done += n;
        if (progress) progress(done, total);
      });
}

}  // namespace peregrine
