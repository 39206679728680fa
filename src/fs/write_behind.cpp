#include "write_behind.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

bool overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b; }

}  // namespace

template <typename Done>
void WriteBehind::wait(MutexLock& lock, Done done, bool reap) {
  if (done()) return;
  ++counts_.waits;
  if (before_wait_) {
    // Unlocked: handing staged IO on can block at a drive's pressure point
    // until a drive thread completes IO, and completing IO calls done().
    mu_.unlock();
    before_wait_();
    mu_.lock();
  }
  if (reap && reap_here_ && reap_ns_ != 0) {
    // Unlocked too: the callbacks reap_here runs call done().
    const uint64_t deadline = monotonic_ns() + reap_ns_;
    while (!done()) {
      mu_.unlock();
      reap_here_();
      // The thread whose kernel work posts the completion may share this
      // CPU: let it run.
      std::this_thread::yield();
      const bool late = monotonic_ns() >= deadline;
      mu_.lock();
      if (late) break;
    }
  }
  lock.wait(cv_, done);
}

size_t WriteBehind::fsynced_index(uint64_t ino) const {
  size_t i = 0;
  while (i < fsynced_.size() && !(fsynced_[i].at != 0 && fsynced_[i].ino == ino)) ++i;
  return i;
}

bool WriteBehind::admit(uint64_t ino, uint64_t start, uint64_t end, uint64_t data_end, bool* fsynced_lately) {
  MutexLock lock(mu_);
  if (pending_bytes_ + (end - start) > budget_) return false;
  File& f = files_[ino];
  for (const Range& r : f.pending) {
    if (overlap(r.start, r.end, start, end)) return false;
  }
  f.pending.push_back(Range{start, end, data_end, ++last_seq_});
  pending_seqs_.insert(last_seq_);
  pending_bytes_ += end - start;
  in_flight_.fetch_add(1, std::memory_order_release);
  ++counts_.answered;
  if (fsynced_lately != nullptr) *fsynced_lately = fsynced_index(ino) != fsynced_.size();
  return true;
}

void WriteBehind::note_fsync(uint64_t ino) {
  MutexLock lock(mu_);
  size_t i = fsynced_index(ino);
  if (i == fsynced_.size()) {
    auto oldest = std::min_element(fsynced_.begin(), fsynced_.end(),
                                   [](const Fsynced& a, const Fsynced& b) { return a.at < b.at; });
    i = static_cast<size_t>(oldest - fsynced_.begin());
  }
  fsynced_[i] = Fsynced{ino, ++fsync_calls_};
}

void WriteBehind::withdraw(uint64_t ino, uint64_t start, uint64_t end) {
  done(ino, start, end, 0);
  MutexLock lock(mu_);
  --counts_.answered;
}

bool WriteBehind::overlaps(uint64_t ino, uint64_t start, uint64_t end) {
  if (idle()) return false;  // every O_DIRECT write asks: no lock then
  MutexLock lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return false;
  return std::any_of(it->second.pending.begin(), it->second.pending.end(),
                     [&](const Range& r) { return overlap(r.start, r.end, start, end); });
}

void WriteBehind::done(uint64_t ino, uint64_t start, uint64_t end, int err) {
  MutexLock lock(mu_);
  File& f = files_[ino];
  auto it = std::find_if(f.pending.begin(), f.pending.end(),
                         [&](const Range& r) { return r.start == start && r.end == end; });
  if (it != f.pending.end()) {
    pending_seqs_.erase(it->seq);
    *it = f.pending.back();
    f.pending.pop_back();
    in_flight_.fetch_sub(1, std::memory_order_release);
  }
  pending_bytes_ -= end - start;
  if (err != 0) {
    ++counts_.errors;
    if (f.error == 0) f.error = err;
    if (volume_error_ == 0) volume_error_ = err;
  }
  if (f.pending.empty() && f.error == 0) files_.erase(ino);
  cv_.notify_all();
}

int WriteBehind::wait_file(uint64_t ino, bool take_error, bool reap) {
  MutexLock lock(mu_);
  const uint64_t target = last_seq_;
  wait(
      lock,
      [&] {
        mu_.assert_held();  // wait() calls it with mu_ held
        auto it = files_.find(ino);
        return it == files_.end() || std::none_of(it->second.pending.begin(), it->second.pending.end(),
                                                  [&](const Range& r) { return r.seq <= target; });
      },
      reap);
  auto it = files_.find(ino);
  if (it == files_.end()) return 0;
  const int err = it->second.error;
  if (take_error) {
    it->second.error = 0;
    // Writes admitted since the call stay tracked.
    if (it->second.pending.empty()) files_.erase(it);
  }
  return err;
}

int WriteBehind::wait_all() {
  MutexLock lock(mu_);
  const uint64_t target = last_seq_;
  wait(lock, [&] {
    mu_.assert_held();  // wait() calls it with mu_ held
    return pending_seqs_.empty() || *pending_seqs_.begin() > target;
  });
  return std::exchange(volume_error_, 0);
}

uint64_t WriteBehind::pending_end(uint64_t ino) const {
  if (idle()) return 0;
  MutexLock lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return 0;
  uint64_t end = 0;
  for (const Range& r : it->second.pending) end = std::max(end, r.data_end);
  return end;
}

uint64_t WriteBehind::pending_bytes(uint64_t ino) const {
  if (idle()) return 0;
  MutexLock lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return 0;
  uint64_t bytes = 0;
  for (const Range& r : it->second.pending) bytes += r.end - r.start;
  return bytes;
}

WriteBehind::Counts WriteBehind::counts() {
  MutexLock lock(mu_);
  Counts c = counts_;
  c.pending_bytes = pending_bytes_;
  return c;
}

}  // namespace peregrine::fs
