// Metadata: data mapping for the IO path (map_read, prepare_write,
// complete_write, fallocate, seek).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "peregrine/meta/metadata.h"
#include "txn_builder.h"

namespace peregrine::meta {

namespace {
constexpr uint64_t kMaxFileSize = uint64_t{1} << 60;
constexpr const char* kCapabilityXattr = "security.capability";
// Retries of an allocation that found no space while space may come
// (Metadata::space_may_come): frees made durable, then what the coming
// releases freed.
constexpr int kSpaceAttempts = 2;
uint64_t down(uint64_t v) { return v / kBlockSize * kBlockSize; }
uint64_t up(uint64_t v) { return (v + kBlockSize - 1) / kBlockSize * kBlockSize; }

// What a transaction's extent deltas can add to the checkpoint body, at
// most, and whether it allocates.
uint64_t extent_growth(const Txn& txn, bool* allocates) {
  uint64_t g = 0;
  for (const Delta& d : txn) {
    if (d.type == DeltaType::kExtentMap || d.type == DeltaType::kExtentUnmap || d.type == DeltaType::kExtentWritten)
      g += kExtentDeltaGrowth;
    if (d.type == DeltaType::kExtentMap && allocates) *allocates = true;
  }
  return g;
}

// Returns the volume ranges of a transaction's ExtentMap deltas to the
// allocator: the transaction was refused and they were never mapped.
void free_unmapped(Allocator& alloc, const Txn& txn) {
  for (const Delta& d : txn) {
    if (d.type == DeltaType::kExtentMap) alloc.free_now(VolRange{d.b, d.c});
  }
}

int check_regular(const Inode* in) {
  if (!in) return -ENOENT;
  if (in->is_dir()) return -EISDIR;
  if (!in->is_reg()) return -EINVAL;
  return 0;
}
}  // namespace

bool Metadata::atime_due(const Inode& in) const {
  constexpr int64_t kDay = int64_t{24} * 3600 * 1000000000;
  // The kernel stamps with its coarse clock, one tick (4 ms at HZ=250)
  // apart, and skips an update to the time the atime already has: strict
  // updates come at most that often, not one exclusive lock per read.
  constexpr int64_t kTick = 4000000;
  const InodeAttr& a = in.attr;
  switch (opt_.atime) {
    case AtimeRule::kNoatime: return false;
    case AtimeRule::kStrict: {
      const int64_t since = now() - a.atime_ns;
      return since < 0 || since >= kTick;
    }
    case AtimeRule::kRelatime:
      // Once the atime is past mtime and ctime (the usual case), each read
      // costs a coarse clock read (vDSO), no lock beyond map_read's shared
      // one.
      return a.atime_ns <= a.mtime_ns || a.atime_ns <= a.ctime_ns || coarse_now() - a.atime_ns >= kDay;
  }
  return false;
}

bool Metadata::accessed(Ino ino) {
  if (opt_.read_only || opt_.atime == AtimeRule::kNoatime) return false;
  {
    // Most accesses change nothing (relatime): no exclusive lock for them.
    ReaderLock lk(ns_mu_);
    const Inode* in = model_.find(ino);
    if (in == nullptr || !atime_due(*in)) return false;
  }
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (in == nullptr || !atime_due(*in)) return false;  // another reader was first
  const int64_t t = now();
  if (opt_.atime == AtimeRule::kStrict || logged_recently(*in, t)) {
    // As rewrite times: a read after every write of a busy file must not
    // journal a record each time.
    in->attr.atime_ns = t;
    mark_times_unlogged(in);
    return true;
  }
  TxnBuilder b;
  b.attr(in).atime_ns = t;
  return commit_txn(b.finish()) == 0;
}

int Metadata::map_read(Ino ino, uint64_t off, uint64_t len, std::vector<Segment>* out, bool* atime_due_out,
                       uint64_t* size_out) {
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (int rc = check_regular(in); rc != 0) return rc;
  if (atime_due_out != nullptr) *atime_due_out = atime_due(*in);
  if (size_out != nullptr) *size_out = in->attr.size;
  if (off >= in->attr.size || len == 0) return 0;
  const uint64_t end = std::min(in->attr.size, off + std::min(len, kMaxFileSize));
  in->extents.for_each_piece(off, end - off, [out](const MapPiece& p) {
    Segment s{p.file_off, 0, p.len, Segment::kZero};
    if (p.mapped && p.written) {
      s.kind = Segment::kData;
      s.vol_off = p.vol_off;
    }
    if (!out->empty() && out->back().kind == Segment::kZero && s.kind == Segment::kZero) {
      out->back().len += s.len;
    } else {
      out->push_back(s);
    }
  });
  return 0;
}

// Maps unwritten extents over every hole in the block range [bs, be).
int Metadata::allocate_holes(TxnBuilder& b, Inode* in, uint64_t bs, uint64_t be) {
  std::vector<MapPiece> pieces;
  in->extents.lookup(bs, be - bs, &pieces);
  std::vector<std::pair<uint64_t, VolRange>> got;  // file_off -> volume range
  for (const MapPiece& p : pieces) {
    if (p.mapped) continue;
    std::vector<VolRange> ranges;
    uint64_t goal = in->extents.goal_for(p.file_off);
    if (!got.empty()) goal = got.back().second.off + got.back().second.len;
    int rc = alloc_->allocate(in->attr.ino, goal, p.len, &ranges);
    if (rc != 0) {
      for (const auto& [f, r] : got) alloc_->free_now(r);
      return rc;
    }
    uint64_t f = p.file_off;
    for (const VolRange& r : ranges) {
      got.push_back({f, r});
      f += r.len;
    }
  }
  for (const auto& [f, r] : got) {
    Delta d;
    d.type = DeltaType::kExtentMap;
    d.ino = in->attr.ino;
    d.a = f;
    d.b = r.off;
    d.c = r.len;
    d.written = false;
    b.add(d);
  }
  return 0;
}

bool Metadata::space_may_come() const {
  if (alloc_->deferred_bytes() > 0) return true;
  MutexLock lock(releases_mu_);
  return coming_releases_ > 0;
}

int Metadata::await_space() {
  {
    MutexLock lock(releases_mu_);
    if (coming_releases_ > 0) {
      ++release_waits_;
      lock.wait_for(releases_done_, std::chrono::milliseconds(kReleaseWaitMs), [this] {
        releases_mu_.assert_held();
        return coming_releases_ == 0;
      });
    }
  }
  // What they freed (and any other free) is usable once durable.
  return journal_->commit_all() != 0 ? -EIO : 0;
}

int Metadata::prepare_write(Ino ino, uint64_t off, uint64_t len, std::vector<WriteRange>* out, bool* rewrite_done,
                            uint64_t* size_before, bool kernel_stamped) {
  const bool stamps = !(opt_.kernel_stamps_writes && kernel_stamped);
  if (rewrite_done) *rewrite_done = false;
  if (opt_.read_only) return -EROFS;
  if (len == 0) return 0;
  if (off >= kMaxFileSize || len > kMaxFileSize - off) return -EFBIG;
  if (write_failed()) return -EROFS;  // even an overwrite: the volume stopped taking changes
  const uint64_t bs = down(off), be = up(off + len);
  for (int attempt = 0;; ++attempt) {
    WriterLock lk(ns_mu_);
    Inode* in = model_.find(ino);
    if (int rc = check_regular(in); rc != 0) return rc;
    if (size_before != nullptr) *size_before = in->attr.size;
    TxnBuilder b;
    int rc = allocate_holes(b, in, bs, be);
    if (rc == -ENOSPC && attempt < kSpaceAttempts && space_may_come()) {
      lk.unlock();
      if (int w = await_space(); w != 0) return w;
      continue;
    }
    if (rc != 0) return rc;
    // A written file loses its file capabilities, whoever writes, as on a
    // local filesystem (the kernel removes them itself only before cached
    // writes).
    if (in->xattrs.count(kCapabilityXattr) != 0) {
      b.add(xattr_del(ino, kCapabilityXattr));
      b.attr(in).ctime_ns = now();
    }
    if (!b.txn.empty()) {
      // New extents grow the checkpoint; a rewrite of mapped blocks
      // allocates nothing and is never refused here.
      if (!space_locked().fits_allocation(extent_growth(b.txn, nullptr))) {
        free_unmapped(*alloc_, b.txn);
        return -ENOSPC;
      }
      if (int crc = commit_txn(b.finish()); crc != 0) return crc;
    }
    bool rewrite = off + len <= in->attr.size;
    in->extents.for_each_piece(bs, be - bs, [&](const MapPiece& p) {
      out->push_back({p.file_off, p.vol_off, p.len, p.written});
      rewrite = rewrite && p.written;
    });
    // Its completion would change nothing but the times: set them now, and
    // the IO completion threads need not take ns_mu_ for it (they contended
    // for it on every 4 KiB rewrite).
    if (rewrite_done && rewrite) {
      if (stamps) {
        if (int trc = touch_rewrite_times(in, now()); trc != 0) return trc;
      }
      *rewrite_done = true;
    }
    return 0;
  }
}

bool Metadata::defer_rewrite_times(Inode* in, int64_t t) {
  // Journaling the times of every rewrite cost ~11% of 4 KiB random-write
  // IOPS, so they are deferred: at most one timestamps record per file per
  // commit interval, and fsync()/sync() journal what is pending. A crash
  // can lose up to about one commit interval of timestamp updates (as ext4
  // loses up to its commit interval), never data or sizes.
  if (!logged_recently(*in, t)) return false;
  in->attr.mtime_ns = in->attr.ctime_ns = t;
  mark_times_unlogged(in);
  return true;
}

bool Metadata::logged_recently(const Inode& in, int64_t t) const {
  const int64_t interval = int64_t{opt_.commit_interval_ms} * 1000000;
  return interval > 0 && t - in.attr_logged_at < interval;
}

void Metadata::mark_times_unlogged(Inode* in) {
  if (!in->times_unlogged) {
    in->times_unlogged = true;
    if (times_unlogged_.size() >= times_unlogged_compact_at_) {
      // Drop entries whose times were journaled since, so the list stays
      // about as long as the files with unlogged times. The next pass
      // waits until the list has doubled: with many such files, a scan
      // per new one would make this quadratic under the namespace lock.
      std::erase_if(times_unlogged_, [&](Ino i) {
        ns_mu_.assert_held();  // runs inside erase_if, under this function's lock
        const Inode* x = model_.find(i);
        return x == nullptr || !x->times_unlogged;
      });
      times_unlogged_compact_at_ = std::max<size_t>(4096, 2 * times_unlogged_.size());
    }
    times_unlogged_.push_back(in->attr.ino);
  }
}

int Metadata::touch_rewrite_times(Inode* in, int64_t t) {
  if (defer_rewrite_times(in, t)) return 0;
  TxnBuilder b;
  InodeAttr& a = b.attr(in);
  a.mtime_ns = a.ctime_ns = t;
  return commit_txn(b.finish());
}

int Metadata::complete_write(Ino ino, std::span<const WriteRange> ranges, uint64_t new_size, bool kernel_stamped) {
  if (opt_.read_only) return -EROFS;
  const bool stamps = !(opt_.kernel_stamps_writes && kernel_stamped);
  WriterLock lk(ns_mu_);
  Inode* in = model_.find(ino);
  if (int rc = check_regular(in); rc != 0) return rc;
  TxnBuilder b;
  for (const WriteRange& r : ranges) {
    if (r.len == 0 || r.file_off % kBlockSize || r.vol_off % kBlockSize || r.len % kBlockSize) return -EINVAL;
    // Journal only a real state change (rewrites of written data need none).
    std::vector<MapPiece> pieces;
    in->extents.lookup(r.file_off, r.len, &pieces);
    const bool changes = std::any_of(pieces.begin(), pieces.end(), [&](const MapPiece& p) {
      return p.mapped && !p.written && p.vol_off - p.file_off == r.vol_off - r.file_off;
    });
    if (!changes) continue;
    Delta d;
    d.type = DeltaType::kExtentWritten;
    d.ino = ino;
    d.a = r.file_off;
    d.b = r.vol_off;
    d.c = r.len;
    b.add(d);
  }
  const int64_t t = now();
  // A rewrite of written blocks within the file changes only mtime/ctime.
  if (b.txn.empty() && new_size <= in->attr.size && (!stamps || defer_rewrite_times(in, t))) return 0;
  // Marking part of an unwritten extent written can split it. The data is on
  // the volume already; when even that does not fit, the range stays
  // unwritten (reads as zeros) and the write fails.
  if (!b.txn.empty() && !space_locked().fits_at_all(extent_growth(b.txn, nullptr))) return -ENOSPC;
  // A size grown over bytes a write just put on the volume: those bytes
  // reach the media before the record does (a rewrite of a written block
  // sets no written state that would make the batch flush first).
  const bool grows = new_size > in->attr.size;
  InodeAttr& a = b.attr(in);
  a.size = std::max(a.size, std::min(new_size, kMaxFileSize));
  if (stamps) a.mtime_ns = a.ctime_ns = t;
  return commit_txn(b.finish(), grows);
}

int Metadata::fallocate(Ino ino, int mode, uint64_t off, uint64_t len) {
  if (opt_.read_only) return -EROFS;
  if (len == 0) return -EINVAL;
  if (off >= kMaxFileSize || len > kMaxFileSize - off) return -EFBIG;
  const bool keep = mode & FALLOC_FL_KEEP_SIZE;
  const int op = mode & ~FALLOC_FL_KEEP_SIZE;
  if (op == FALLOC_FL_PUNCH_HOLE && !keep) return -EOPNOTSUPP;
  if (op != 0 && op != FALLOC_FL_PUNCH_HOLE && op != FALLOC_FL_ZERO_RANGE) return -EOPNOTSUPP;
  for (int attempt = 0;; ++attempt) {
    WriterLock lk(ns_mu_);
    Inode* in = model_.find(ino);
    if (int rc = check_regular(in); rc != 0) return rc;
    TxnBuilder b;
    InodeAttr& a = b.attr(in);
    const int64_t t = now();
    if (op == FALLOC_FL_PUNCH_HOLE || op == FALLOC_FL_ZERO_RANGE) {
      // Whole blocks inside the range; partial edge blocks are the caller's.
      const uint64_t s = up(off), e = down(off + len);
      if (e > s) {
        Delta d;
        d.type = DeltaType::kExtentUnmap;
        d.ino = ino;
        d.a = s;
        d.c = e - s;
        b.add(d);
        if (op == FALLOC_FL_ZERO_RANGE) {
          // Unmap first so allocate_holes sees holes: apply on a scratch
          // lookup is not possible, so allocate the whole block range.
          std::vector<VolRange> ranges;
          int rc = alloc_->allocate(ino, 0, e - s, &ranges);
          if (rc == -ENOSPC && attempt < kSpaceAttempts && space_may_come()) {
            lk.unlock();
            if (int w = await_space(); w != 0) return w;
            continue;
          }
          if (rc != 0) return rc;
          uint64_t f = s;
          for (const VolRange& r : ranges) {
            Delta m;
            m.type = DeltaType::kExtentMap;
            m.ino = ino;
            m.a = f;
            m.b = r.off;
            m.c = r.len;
            b.add(m);
            f += r.len;
          }
        }
      }
      a.mtime_ns = a.ctime_ns = t;
    } else {
      int rc = allocate_holes(b, in, down(off), up(off + len));
      if (rc == -ENOSPC && attempt < kSpaceAttempts && space_may_come()) {
        lk.unlock();
        if (int w = await_space(); w != 0) return w;
        continue;
      }
      if (rc != 0) return rc;
    }
    // As setattr's: a grown size must not be durable before the zeros a
    // shrink wrote over the last block's tail.
    const bool grows = !keep && off + len > a.size;
    if (grows) {
      a.size = off + len;
      a.mtime_ns = a.ctime_ns = t;
    }
    bool allocates = false;
    const uint64_t growth = extent_growth(b.txn, &allocates);
    const MetaSpace sp = space_locked();
    if (allocates ? !sp.fits_allocation(growth) : !sp.fits_at_all(growth)) {
      free_unmapped(*alloc_, b.txn);
      return -ENOSPC;
    }
    return commit_txn(b.finish(), grows);
  }
}

int Metadata::seek(Ino ino, uint64_t off, int whence, uint64_t* result) {
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return -EINVAL;
  ReaderLock lk(ns_mu_);
  const Inode* in = model_.find(ino);
  if (int rc = check_regular(in); rc != 0) return rc;
  const uint64_t size = in->attr.size;
  if (off >= size) return -ENXIO;
  std::vector<MapPiece> pieces;
  in->extents.lookup(off, size - off, &pieces);
  for (const MapPiece& p : pieces) {
    const bool data = p.mapped && p.written;
    if (data == (whence == SEEK_DATA)) {
      *result = p.file_off;
      return 0;
    }
  }
  if (whence == SEEK_DATA) return -ENXIO;
  *result = size;  // the implicit hole at EOF
  return 0;
}

}  // namespace peregrine::meta
