#include "restripe_window.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <thread>

#include "member_refusal.h"
#include "member_zero.h"

namespace peregrine {
namespace {

// Whether SEEK_DATA on this member tells data written a moment ago (done,
// not synced) from a hole: ext4, XFS, btrfs and tmpfs do (delayed
// allocation counts as data); some filesystems have reported holes over
// dirty data (OpenZFS before 2.1.14 / 2.2.2), so elsewhere a volume in use
// has no holes. A block device has none anyway.
bool holes_trusted_while_written(const MemberFile& m) {
  if (m.info().is_block_device) return false;
  struct statfs fs {};
  if (::fstatfs(m.fd(), &fs) != 0) return false;
  const long t = static_cast<long>(fs.f_type);
  return t == EXT4_SUPER_MAGIC || t == XFS_SUPER_MAGIC || t == BTRFS_SUPER_MAGIC || t == TMPFS_MAGIC;
}

// One vectored transfer of consecutive member bytes, resumed after a short one.
Status transfer(const MemberFile& m, bool write, uint64_t offset, std::vector<iovec>& iov) {
  if (write && m.writes_routed()) {
    // A test's power-cut layer logs each write: one buffer at a time.
    for (const iovec& v : iov) {
      if (int rc = m.pwrite_full(v.iov_base, v.iov_len, offset); rc < 0)
        return member_io_error(m, "write", offset, -rc);
      offset += v.iov_len;
    }
    return Status::ok();
  }
  size_t i = 0;
  while (i < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(IOV_MAX, iov.size() - i));
    ssize_t r = write ? ::pwritev(m.fd(), &iov[i], count, static_cast<off_t>(offset))
                      : ::preadv(m.fd(), &iov[i], count, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return member_io_error(m, write ? "write" : "read", offset, r == 0 ? EIO : errno);
    offset += static_cast<uint64_t>(r);
    while (r > 0) {
      if (static_cast<size_t>(r) >= iov[i].iov_len) {
        r -= static_cast<ssize_t>(iov[i].iov_len);
        ++i;
      } else {
        iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + r;
        iov[i].iov_len -= static_cast<size_t>(r);
        r = 0;
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status on_member_threads(uint32_t n, const std::function<Status(uint32_t)>& fn) {
  std::vector<Status> results(n, Status::ok());
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (uint32_t i = 0; i < n; ++i) threads.emplace_back([&, i] { results[i] = fn(i); });
  for (std::thread& t : threads) t.join();
  for (Status& s : results)
    if (!s) return s;
  return Status::ok();
}

RestripeMover::RestripeMover(const RestripeMap& map, const std::vector<MemberFile>& members, uint64_t max_units,
                             bool skip_holes)
    : map_(map),
      members_(members),
      max_units_(std::max<uint64_t>(max_units, 1)),
      skip_holes_(skip_holes),
      buf_{AlignedBuffer(max_units_ * map.unit), AlignedBuffer(max_units_ * map.unit)},
      zeros_(1 << 20) {}

Status RestripeMover::for_members(uint32_t n, const std::function<Status(uint32_t)>& fn) const {
  if (!gentle_) return on_member_threads(n, fn);
  for (uint32_t m = 0; m < n; ++m)
    if (Status s = fn(m); !s) return s;
  return Status::ok();
}

bool RestripeMover::is_hole(uint64_t u) const {
  if (!skip_holes_ && (u < holes_begin_ || u >= holes_end_)) return false;
  const RestripeMap::Place p = map_.old_place(u);
  const std::vector<CopyRange>& segs = segments_[p.member];
  auto it = std::upper_bound(segs.begin(), segs.end(), p.offset,
                             [](uint64_t off, const CopyRange& r) { return off < r.end; });
  return it == segs.end() || it->begin >= p.offset + map_.unit;
}

Status RestripeMover::plan(uint64_t cursor) {
  total_ = data_ = holes_ = 0;
  if (!skip_holes_) {
    const uint64_t first = std::max<uint64_t>(cursor, map_.old_count);
    total_ = first < map_.end() ? (map_.end() - first) * map_.unit : 0;
    return Status::ok();
  }
  segments_.assign(map_.old_count, {});
  for (uint32_t m = 0; m < map_.old_count; ++m) {
    auto segs = data_segments(members_[m], map_.data_start, map_.data_start + map_.rows * map_.unit);
    if (!segs) return segs.status();
    segments_[m] = std::move(*segs);
  }
  // The data units still to move, counted from the segments (a volume of
  // large members has far more units than segments).
  total_ = data_ = holes_ = 0;
  const uint64_t first = std::max<uint64_t>(cursor, map_.old_count);
  for (uint32_t m = 0; m < map_.old_count; ++m) {
    const uint64_t min_row = first > m ? (first - m + map_.old_count - 1) / map_.old_count : 0;
    uint64_t next_row = min_row;  // rows below are counted or not to move
    for (const CopyRange& seg : segments_[m]) {
      if (seg.end <= map_.data_start || seg.begin >= seg.end) continue;
      const uint64_t r0 = (std::max(seg.begin, map_.data_start) - map_.data_start) / map_.unit;
      const uint64_t r1 = std::min((seg.end - 1 - map_.data_start) / map_.unit + 1, map_.rows);
      const uint64_t from = std::max(r0, next_row);
      if (r1 > from) total_ += (r1 - from) * map_.unit;
      next_row = std::max(next_row, r1);
    }
  }
  return Status::ok();
}

Status RestripeMover::find_window_holes(uint64_t begin, uint64_t end) {
  holes_begin_ = holes_end_ = 0;
  // Per old member, the span of the window's old places on it.
  std::vector<uint64_t> lo(map_.old_count, UINT64_MAX), hi(map_.old_count, 0);
  for (uint64_t u = std::max<uint64_t>(begin, map_.old_count); u < end; ++u) {
    const RestripeMap::Place p = map_.old_place(u);
    lo[p.member] = std::min(lo[p.member], p.offset);
    hi[p.member] = std::max(hi[p.member], p.offset + map_.unit);
  }
  if (holes_trusted_.empty())
    for (uint32_t m = 0; m < map_.old_count; ++m) holes_trusted_.push_back(holes_trusted_while_written(members_[m]));
  segments_.assign(map_.old_count, {});
  for (uint32_t m = 0; m < map_.old_count; ++m) {
    if (lo[m] >= hi[m]) continue;
    if (!holes_trusted_[m]) {
      segments_[m].push_back({lo[m], hi[m]});
      continue;
    }
    auto segs = data_segments(members_[m], lo[m], hi[m]);
    if (!segs) return segs.status();
    segments_[m] = std::move(*segs);
  }
  holes_begin_ = begin;
  holes_end_ = end;
  return Status::ok();
}

uint64_t RestripeMover::window_end(uint64_t cursor) const {
  const uint64_t safe = map_.window_end(cursor, max_units_ * kHoleReach);
  uint64_t data = 0, u = cursor;
  for (; u < safe; ++u) {
    if (in_place(u) || is_hole(u)) continue;
    if (data == max_units_) break;
    ++data;
  }
  return u;
}

Status RestripeMover::read(int slot, uint64_t begin, uint64_t end) {
  const uint64_t unit = map_.unit;
  std::byte* base = buf_[slot].data();
  // Data units packed in the buffer, in unit order.
  std::vector<uint64_t>& place = place_[slot];
  place.assign(end - begin, 0);
  uint64_t next_place = 0;
  for (uint64_t u = begin; u < end; ++u)
    if (!in_place(u) && !is_hole(u)) {
      place[u - begin] = next_place;
      next_place += unit;
    }
  if (next_place > buf_[slot].size()) return Status::error(EINVAL, "internal: restripe window larger than its buffer");
  // On each old member the window's units sit in consecutive rows.
  return for_members(map_.old_count, [&](uint32_t m) -> Status {
    std::vector<iovec> iov;
    uint64_t run_start = 0, next = 0;
    auto flush = [&]() -> Status {
      if (iov.empty()) return Status::ok();
      Status st = transfer(members_[m], false, run_start, iov);
      iov.clear();
      return st;
    };
    for (uint64_t u = begin + (m + map_.old_count - begin % map_.old_count) % map_.old_count; u < end;
         u += map_.old_count) {
      if (in_place(u) || is_hole(u)) {
        if (Status st = flush(); !st) return st;
        continue;
      }
      const uint64_t off = map_.old_place(u).offset;
      if (!iov.empty() && off != next)
        if (Status st = flush(); !st) return st;
      if (iov.empty()) run_start = off;
      iov.push_back({base + place[u - begin], unit});
      next = off + unit;
      if (gentle_)
        if (Status st = flush(); !st) return st;
    }
    return flush();
  });
}

Status RestripeMover::write(int slot, uint64_t begin, uint64_t end, const std::function<void()>& written) {
  const uint64_t unit = map_.unit;
  std::vector<char> hole(end - begin);
  for (uint64_t u = begin; u < end; ++u) hole[u - begin] = !in_place(u) && is_hole(u);
  std::byte* base = buf_[slot].data();
  const std::vector<uint64_t>& place = place_[slot];
  // Runs of data units written, runs of holes zeroed in place.
  Status s = for_members(map_.new_count, [&](uint32_t m) -> Status {
    std::vector<iovec> iov;
    uint64_t run_start = 0, next = 0, zero_start = 0, zero_end = 0;
    auto flush = [&]() -> Status {
      if (!iov.empty()) {
        Status st = transfer(members_[m], true, run_start, iov);
        iov.clear();
        if (!st) return st;
      }
      if (zero_end > zero_start) {
        Status st = zero_member_range(members_[m], zero_start, zero_end, zeros_);
        zero_start = zero_end = 0;
        if (!st) return st;
      }
      return Status::ok();
    };
    for (uint64_t u = begin + (m + map_.new_count - begin % map_.new_count) % map_.new_count; u < end;
         u += map_.new_count) {
      if (in_place(u)) continue;
      const uint64_t off = map_.new_place(u).offset;
      if (hole[u - begin]) {
        if (!iov.empty() || (zero_end > zero_start && off != zero_end))
          if (Status st = flush(); !st) return st;
        if (zero_end == zero_start) zero_start = off;
        zero_end = off + unit;
        continue;
      }
      if (zero_end > zero_start || (!iov.empty() && off != next))
        if (Status st = flush(); !st) return st;
      if (iov.empty()) run_start = off;
      iov.push_back({base + place[u - begin], unit});
      next = off + unit;
      if (gentle_)
        if (Status st = flush(); !st) return st;
    }
    return flush();
  });
  if (!s) return s;
  if (written) written();
  s = on_member_threads(map_.new_count, [&](uint32_t m) -> Status {
    if (int rc = members_[m].sync(); rc < 0)
      return Status::error(-rc, "member " + members_[m].info().path + ": cannot sync: " + std::strerror(-rc));
    return Status::ok();
  });
  if (!s) return s;
  for (uint64_t u = begin; u < end; ++u) {
    if (in_place(u)) continue;
    (hole[u - begin] ? holes_ : data_) += unit;
  }
  return Status::ok();
}

}  // namespace peregrine
