#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fs_context.h"
#include "peregrine/util/aligned_buffer.h"

namespace peregrine::fs {

uint32_t preferred_io_size(uint64_t stripe_unit, uint32_t members, uint32_t max_request_bytes) {
  uint64_t want = std::min<uint64_t>(stripe_unit * members, max_request_bytes);
  uint32_t size = 4096;
  while (uint64_t{size} * 2 <= want) size *= 2;
  return size;
}

uint32_t FsContext::preferred_io_bytes() const {
  const StripeMap& map = pool.engine().map();
  return preferred_io_size(map.stripe_unit(), map.members(), settings.fuse.max_request_bytes);
}

void fill_stat(const meta::InodeAttr& a, uint32_t blksize, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = a.ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_rdev = a.rdev;
  st->st_size = static_cast<off_t>(a.size);
  st->st_blksize = blksize;
  st->st_blocks = static_cast<blkcnt_t>(a.blocks);
  st->st_atim.tv_sec = a.atime_ns / 1000000000;
  st->st_atim.tv_nsec = a.atime_ns % 1000000000;
  st->st_mtim.tv_sec = a.mtime_ns / 1000000000;
  st->st_mtim.tv_nsec = a.mtime_ns % 1000000000;
  st->st_ctim.tv_sec = a.ctime_ns / 1000000000;
  st->st_ctim.tv_nsec = a.ctime_ns % 1000000000;
}

namespace {

// Whether `pid` has `gid` among its supplementary groups, as its
// /proc/PID/status lists them (FUSE passes only the caller's fsgid; this is
// where libfuse's fuse_req_getgroups() looks too). If the list cannot be
// read, it is taken as not: the bit goes, the safe side.
bool process_in_group(uint32_t pid, uint32_t gid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::istringstream groups(line.substr(7));
    for (uint32_t g = 0; groups >> g;) {
      if (g == gid) return true;
    }
    return false;
  }
  return false;
}

bool caller_in_group(const Caller& c, uint32_t gid) { return c.gid == gid || process_in_group(c.pid, gid); }

}  // namespace

Caller caller_of(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return Caller{static_cast<uint32_t>(c->uid), static_cast<uint32_t>(c->gid), static_cast<uint32_t>(c->pid)};
}

bool caller_may_keep_sgid(const Caller& c, uint32_t gid) { return c.uid == 0 || caller_in_group(c, gid); }

uint32_t suidgid_to_drop(const Caller& c, const meta::InodeAttr& a, bool lacks_fsetid) {
  // Writes, truncates and file_remove_privs() reach regular files only;
  // chown_common() takes the bits from every other non-directory as well
  // (a FIFO, device node or socket), and a directory's setgid means "new
  // entries inherit the group", which no chown removes.
  if (S_ISDIR(a.mode)) return 0;
  uint32_t drop = a.mode & S_ISUID;
  if ((a.mode & S_ISGID) != 0) {
    const bool capable = !lacks_fsetid && c.uid == 0;
    const bool keep = (a.mode & S_IXGRP) == 0 && (capable || caller_in_group(c, a.gid));
    if (!keep) drop |= S_ISGID;
  }
  return drop;
}

int drop_suidgid_for_write(const Caller& c, FsContext& fs, uint64_t ino) {
  meta::InodeAttr a;
  int rc = fs.meta.getattr(ino, &a);
  if (rc != 0) return rc;
  meta::SetAttrIn in;
  in.clear_mode = suidgid_to_drop(c, a, true);
  if (in.clear_mode == 0) return 0;  // the usual case: nothing to remove
  rc = fs.meta.setattr(ino, in, &a);
  if (rc == 0) attributes_changed(fs, ino);
  return rc;
}

int FsContext::write_back_tails() {
  return tails.write_back_all(sync_io, [this](uint64_t ino, uint64_t file_off, uint64_t vol_off) {
    std::vector<meta::Segment> segs;
    if (meta.map_read(ino, file_off, TailBlocks::kBlock, &segs) != 0 || segs.empty()) return false;
    const meta::Segment& s = segs.front();
    return s.kind == meta::Segment::kData && s.file_off == file_off && s.vol_off == vol_off;
  });
}

void attributes_changed(FsContext& fs, uint64_t ino) {
  // A negative offset: attributes only, so no writeback of dirty pages
  // that would need this daemon to serve them first.
  if (fs.session != nullptr) fuse_lowlevel_notify_inval_inode(fs.session, ino, -1, 0);
}

void FsContext::store_then_reply(const DataReply& reply, uint64_t ino, uint64_t off, const char* data, size_t size) {
  data_op_started();
  stores_.push(PageCacheStores::Job{reply, ino, off, std::string(data, size)});
}

void FsContext::run_store(PageCacheStores::Job& job) {
  if (session != nullptr) {
    fuse_bufvec bv = FUSE_BUFVEC_INIT(job.bytes.size());
    bv.buf[0].mem = job.bytes.data();
    // ENOENT: the kernel holds no inode, so no pages either. Nothing else
    // is expected; the write itself is on the volume either way.
    fuse_lowlevel_notify_store(session, job.ino, static_cast<off_t>(job.offset), &bv, fuse_buf_copy_flags{});
  }
  job.reply.written(static_cast<uint32_t>(job.bytes.size()));
  data_op_finished();
}

void patch_size(const FsContext& fs, uint64_t ino, struct stat* st) {
  // Writes answered before their IO raise the size only once on the
  // members (complete_write); a kernel that forgot the file meanwhile must
  // still see the size its writes gave it.
  // The size is read again after the pending writes: one that completed
  // since the caller's read is then in one or the other.
  if (!fs.write_behind.enabled() || !S_ISREG(st->st_mode)) return;
  uint64_t end = fs.write_behind.pending_end(ino);
  meta::InodeAttr now;
  if (fs.meta.getattr(ino, &now) == 0) end = std::max(end, now.size);
  if (end > static_cast<uint64_t>(st->st_size)) st->st_size = static_cast<off_t>(end);
}

fuse_entry_param make_entry(const FsContext& fs, const meta::InodeAttr& a) {
  fuse_entry_param e{};
  e.ino = a.ino;
  // The kernel made the root inode itself, with generation 0, and takes an
  // entry for it with any other generation as a different, stale root (a
  // file handle's ".." reaches it).
  e.generation = a.ino == FUSE_ROOT_ID ? 0 : a.generation;
  fill_stat(a, fs.preferred_io_bytes(), &e.attr);
  patch_size(fs, a.ino, &e.attr);
  e.attr_timeout = fs.attr_timeout;
  e.entry_timeout = fs.entry_timeout;
  return e;
}

void reply_entry_or_error(fuse_req_t req, int rc, const meta::InodeAttr& a) {
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  fuse_entry_param e = make_entry(context(req), a);
  fuse_reply_entry(req, &e);
}

int zero_block_range(FsContext& fs, uint64_t ino, uint64_t from, uint64_t to) {
  // Only bytes inside one block: [from, to) with from/4096 == (to-1)/4096.
  if (to <= from) return 0;
  uint64_t block = from / 4096 * 4096;
  std::vector<meta::Segment> segs;
  meta::InodeAttr attr;
  int rc = fs.meta.getattr(ino, &attr);
  if (rc != 0) return rc;
  // map_read clips to the size; look at the block as far as the file goes.
  if (block >= attr.size) return 0;
  rc = fs.meta.map_read(ino, block, 4096, &segs);
  if (rc != 0) return rc;
  for (const meta::Segment& s : segs) {
    if (s.kind != meta::Segment::kData) continue;
    // The block is mapped and written: read it, zero the range, write back.
    uint64_t vol_block = s.vol_off - (s.file_off - block);
    AlignedBuffer buf(4096);
    rc = fs.sync_io.read(vol_block, buf.span());
    if (rc != 0) return rc;
    std::memset(buf.data() + (from - block), 0, to - from);
    return fs.sync_io.write(vol_block, buf.span());
  }
  return 0;
}

int zero_block_tail(FsContext& fs, uint64_t ino, uint64_t from) {
  if (from % 4096 == 0) return 0;
  return zero_block_range(fs, ino, from, from / 4096 * 4096 + 4096);
}

}  // namespace peregrine::fs
