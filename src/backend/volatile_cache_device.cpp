#include "peregrine/backend/volatile_cache_device.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>

#include "peregrine/util/full_io.h"

namespace peregrine {

Expected<std::unique_ptr<DeviceQueue>> VolatileCacheDevice::create(std::unique_ptr<DeviceQueue> inner,
                                                                   int member_fd, PowerCutPlan plan) {
  // The member's own descriptor may be O_DIRECT; the old bytes are read
  // through the page cache, which O_DIRECT writes keep coherent.
  const std::string self = "/proc/self/fd/" + std::to_string(member_fd);
  int read_fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (read_fd < 0) return Status::error(errno, "power-cut layer: cannot reopen member: " + std::string(strerror(errno)));
  int log_fd = ::open(plan.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    int e = errno;
    ::close(read_fd);
    return Status::error(e, plan.log_path + ": cannot create the undo log: " + strerror(e));
  }
  return std::unique_ptr<DeviceQueue>(new VolatileCacheDevice(std::move(inner), read_fd, log_fd, std::move(plan)));
}

VolatileCacheDevice::VolatileCacheDevice(std::unique_ptr<DeviceQueue> inner, int read_fd, int log_fd,
                                         PowerCutPlan plan)
    : inner_(std::move(inner)), read_fd_(read_fd), log_fd_(log_fd), plan_(std::move(plan)) {}

VolatileCacheDevice::~VolatileCacheDevice() {
  ::close(read_fd_);
  ::close(log_fd_);
}

void VolatileCacheDevice::append(const UndoRecord& r, const void* data) {
  // A log that cannot be written makes every later cut meaningless: stop
  // here rather than let a test pass on it.
  if (write_full(log_fd_, &r, sizeof r) != 0 || (data != nullptr && write_full(log_fd_, data, r.length) != 0)) abort();
}

void VolatileCacheDevice::cut_if_due() {
  // The cut comes before this write or flush reaches the member: just
  // before a flush is where a write that should have waited for it shows.
  if (plan_.kill_at_io != 0 && plan_.ios && plan_.ios->fetch_add(1) + 1 == plan_.kill_at_io) {
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();  // the signal ends the process before this returns
  }
}

uint64_t VolatileCacheDevice::log_write_started(uint64_t offset, uint64_t len) {
  old_.resize(len);
  // Past the end of the file reads as zeros.
  const ssize_t got = pread_upto(read_fd_, old_.data(), len, offset);
  if (got < 0) abort();
  std::memset(old_.data() + got, 0, len - static_cast<uint64_t>(got));
  UndoRecord r;
  r.kind = UndoRecord::write;
  r.seq = next_seq_++;
  r.offset = offset;
  r.length = len;
  append(r, old_.data());
  return r.seq;
}

void VolatileCacheDevice::log_write_completed(uint64_t seq) {
  UndoRecord r;
  r.kind = UndoRecord::completed;
  r.seq = seq;
  r.length = ++completions_;
  append(r);
}

void VolatileCacheDevice::start(const DeviceIo& io) {
  MutexLock lock(mu_);
  if (io.op == IoOp::write) {
    uint64_t len = 0;
    for (uint32_t i = 0; i < io.iovcnt; ++i) len += io.iov[i].iov_len;
    started_[io.tag] = Started{IoOp::write, log_write_started(io.offset, len)};
  } else if (io.op == IoOp::flush) {
    started_[io.tag] = Started{IoOp::flush, completions_};
  }
  if (io.op != IoOp::read) cut_if_due();
  inner_->start(io);
}

int VolatileCacheDevice::flush_blocking() {
  uint64_t covers;
  {
    MutexLock lock(mu_);
    covers = completions_;
  }
  cut_if_due();
  const int rc = inner_->flush_blocking();
  if (rc == 0) {
    MutexLock lock(mu_);
    UndoRecord r;
    r.kind = UndoRecord::flushed;
    r.seq = covers;
    append(r);
  }
  return rc;
}

int64_t VolatileCacheDevice::transfer_blocking(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
  if (op != IoOp::write) return inner_->transfer_blocking(op, offset, buf, len);
  uint64_t seq;
  {
    MutexLock lock(mu_);
    seq = log_write_started(offset, len);
  }
  cut_if_due();
  const int64_t n = inner_->transfer_blocking(op, offset, buf, len);
  MutexLock lock(mu_);
  log_write_completed(seq);
  return n;
}

void VolatileCacheDevice::note_completions(std::span<DeviceCompletion> done) {
  MutexLock lock(mu_);
  for (const DeviceCompletion& c : done) {
    auto it = started_.find(c.tag);
    if (it == started_.end()) continue;  // a read
    const Started s = it->second;
    started_.erase(it);
    if (s.op == IoOp::write) {
      log_write_completed(s.seq);
    } else if (c.result >= 0) {
      UndoRecord r;
      r.kind = UndoRecord::flushed;
      r.seq = s.seq;
      append(r);
    }
  }
}

size_t VolatileCacheDevice::reap(std::span<DeviceCompletion> out) {
  size_t n = inner_->reap(out);
  note_completions(out.first(n));
  return n;
}

size_t VolatileCacheDevice::reap_finished_inline(std::span<DeviceCompletion> out) {
  size_t n = inner_->reap_finished_inline(out);
  note_completions(out.first(n));
  return n;
}

Expected<PowerCutOutcome> apply_power_cut(const std::string& member_path, const std::string& log_path,
                                          uint64_t seed) {
  int log_fd = ::open(log_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (log_fd < 0) return Status::error(errno, log_path + ": " + strerror(errno));
  struct Write {
    uint64_t offset;
    std::vector<std::byte> old;
    uint64_t completion = 0;  // 0: never completed
  };
  std::map<uint64_t, Write> writes;  // by sequence number
  uint64_t durable_through = 0;      // completion index
  for (;;) {
    UndoRecord r;
    ssize_t n = ::read(log_fd, &r, sizeof r);
    if (n == 0) break;
    // A record cut short by the kill is the last one: what it describes
    // never reached the member (its write is started only after it).
    if (n != static_cast<ssize_t>(sizeof r) || r.magic != UndoRecord::kMagic) break;
    if (r.kind == UndoRecord::write) {
      Write w{r.offset, std::vector<std::byte>(r.length)};
      if (::read(log_fd, w.old.data(), r.length) != static_cast<ssize_t>(r.length)) break;
      writes.emplace(r.seq, std::move(w));
    } else if (r.kind == UndoRecord::completed) {
      if (auto it = writes.find(r.seq); it != writes.end()) it->second.completion = r.length;
    } else if (r.kind == UndoRecord::flushed) {
      durable_through = std::max(durable_through, r.seq);
    }
  }
  ::close(log_fd);

  int fd = ::open(member_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(errno, member_path + ": " + strerror(errno));
  std::mt19937_64 rng(seed);
  PowerCutOutcome out;
  // Newest first: an older write's old bytes go back only where no newer
  // write that was kept lies over them.
  std::vector<std::pair<uint64_t, uint64_t>> kept;  // member byte ranges
  auto restore = [&](uint64_t begin, uint64_t end, const Write& w) {
    // [begin, end) of w, minus the kept ranges.
    std::vector<std::pair<uint64_t, uint64_t>> todo{{begin, end}};
    for (const auto& [kb, ke] : kept) {
      std::vector<std::pair<uint64_t, uint64_t>> next;
      for (const auto& [b, e] : todo) {
        if (ke <= b || kb >= e) {
          next.emplace_back(b, e);
          continue;
        }
        if (b < kb) next.emplace_back(b, kb);
        if (ke < e) next.emplace_back(ke, e);
      }
      todo.swap(next);
    }
    for (const auto& [b, e] : todo)
      if (pwrite_full(fd, w.old.data() + (b - w.offset), e - b, b) != 0) return false;
    return true;
  };
  for (auto it = writes.rbegin(); it != writes.rend(); ++it) {
    const Write& w = it->second;
    if (w.completion != 0 && w.completion <= durable_through) {
      kept.emplace_back(w.offset, w.offset + w.old.size());  // durable: no older write's old bytes go over it
      continue;
    }
    ++out.pending;
    const uint64_t len = w.old.size();
    const uint64_t unit = (rng() & 1) ? 4096 : 512;
    const uint64_t units = len / unit;
    const unsigned fate = static_cast<unsigned>(rng() % 3);  // keep, lose, tear
    uint64_t keep_bytes = 0;
    if (fate == 0) {
      keep_bytes = len;
      ++out.kept;
    } else if (fate == 2 && units >= 2) {
      keep_bytes = (1 + rng() % (units - 1)) * unit;
      ++out.torn;
    } else {
      ++out.lost;
    }
    if (keep_bytes < len && !restore(w.offset + keep_bytes, w.offset + len, w)) {
      int e = errno;
      ::close(fd);
      return Status::error(e, member_path + ": cannot put old bytes back: " + strerror(e));
    }
    if (keep_bytes > 0) kept.emplace_back(w.offset, w.offset + keep_bytes);
  }
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    return Status::error(e, member_path + ": fsync: " + strerror(e));
  }
  ::close(fd);
  return out;
}

}  // namespace peregrine
