// write: block-aligned writes go out asynchronously — allocate (unwritten)
// extents, send one engine request per extent, and on the last completion
// mark them written and answer FUSE from the drive thread (a rewrite of
// written blocks inside the file has nothing to mark: its times are set
// when it starts). A write with a
// partial first or last block does read-modify-write of those blocks, with
// the file's gate held exclusively so concurrent writers to the same block
// cannot lose each other's bytes; that path runs on the FUSE thread (on a
// ring thread only where it waits for nothing: the gate is free and the
// members finish the IO inline, try_serve_write_without_waiting). A
// write the kernel marks (caller without CAP_FSETID) first removes the
// file's suid/sgid.
//
// A write of bytes the kernel's page cache may hold (io_gates.h) takes the
// exclusive path and, once its bytes are on the volume and the gate is
// open again, stores them into the page cache before it answers.
// Both transports call serve_write() (transport/data_calls.h).
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "data_ops.h"
#include "fs_context.h"
#include "request_staging.h"

namespace peregrine::fs {
namespace {

// Every WRITE refused with an error is answered here: a page-cache
// writeback refused for want of space is also told to its writer at its
// next write(2) (refused_writebacks.h); the kernel's attributes go stale
// before the reply, so that write asks.
void refuse(FsContext& fs, const WriteCall& call, int err) {
  if (call.marks.from_page_cache && RefusedWritebacks::for_want_of_space(err)) {
    fs.refused_writebacks.note(call.ino, err);
    attributes_changed(fs, call.ino);
  }
  call.reply.error(err);
}

// After a write that mapped blocks the file did not hold written: with
// fuse.cache=writeback the kernel keeps an open file's attributes and
// takes nothing from a WRITE's reply, so the st_blocks it cached before
// (0 for a new file) would stay until the file is closed, even after an
// fsync; tar --sparse and cp --sparse=auto take that for holes. ext4
// counts them at once: have the kernel ask again. (With fuse.cache=direct
// the kernel drops its count after each write itself.)
void blocks_changed(FsContext& fs, uint64_t ino, const std::vector<meta::WriteRange>& ranges) {
  if (fs.settings.fuse.cache != config::CacheMode::kWriteback) return;
  for (const meta::WriteRange& w : ranges) {
    if (!w.written) {
      attributes_changed(fs, ino);
      return;
    }
  }
}

void finish(WriteOp* op) {
  int err = op->error.load();
  // Only completed writes are marked written: a failed one stays unwritten
  // and reads as zeros, never as stale volume bytes.
  if (err == 0 && !op->rewrite_done)
    err = op->fs->meta.complete_write(op->ino, op->ranges, op->new_end, op->kernel_stamped);
  // Not for a write answered long ago: it told the kernel at its answer
  // (its blocks were allocated then), and a notification from here could
  // meet an unmount that holds the kernel's superblock lock.
  if (err == 0 && !op->answered) blocks_changed(*op->fs, op->ino, op->ranges);
  FsContext* fs = op->fs;
  if (op->answered) {
    // Answered long ago: its error waits for the file's next fsync. The
    // gate is left last, so that a truncate never overtakes the record.
    fs->write_behind.done(op->ino, op->span.start, op->blocks_end, err);
    fs->gates.unlock_shared_write(op->ino, IoGates::answered(op->span));
  } else {
    if (err != 0) {
      op->reply.error(-err);
    } else {
      op->reply.written(static_cast<uint32_t>(op->size));
    }
    fs->gates.unlock_shared_write(op->ino, op->span);
  }
  fs->op_pools.writes.put(op);
  fs->data_op_finished();
}

void on_extent_written(Request& r, int result) {
  auto* op = static_cast<WriteOp*>(r.context);
  if (result != 0) {
    int expected = 0;
    op->error.compare_exchange_strong(expected, result);
  }
  if (op->pending.fetch_sub(1) == 1) finish(op);
}

// One member write per range of the op, staged on this thread's submitter
// from `source` (the data of the write at file offset `off`).
void stage_extent_writes(WriteOp* op, Submitter* sub, std::byte* source, uint64_t off) {
  for (size_t i = 0; i < op->ranges.size(); ++i) {
    const meta::WriteRange& w = op->ranges[i];
    Request& r = op->reqs[i];
    r.op = IoOp::write;
    r.offset = w.vol_off;
    r.length = w.len;
    r.buffer = source + (w.file_off - off);  // only read: the engine writes it out
    r.on_complete = &on_extent_written;
    r.context = op;
    // Nobody waits for an answered write: not worth polling for, and the
    // drive may hold it for its neighbours. Not even one whose file's
    // fsync is likely on its way (awaited_soon): it is sent at once, and
    // polling for it here would hold back the reply that lets the fsync
    // come, which then waits for the IO itself.
    r.awaited = !op->answered;
    r.may_hold = op->may_hold;
    int src = sub == nullptr ? -EAGAIN : sub->add(r);
    if (src != 0) on_extent_written(r, src);
  }
}

// Returns false, having done nothing, if the page cache may hold the bytes
// or the file's tail block (tail_blocks.h) is among them. The write starts
// on a block; it ends on one, or at the end of the file (a page-cache
// writeback, which the kernel cuts at its size): then the rest of its last
// block is beyond the end of the file, zeros, and written as such.
// may_wait false: also declines (false, having done nothing) where entering
// the file's gate would wait, for a thread that must not (a ring's).
bool write_aligned(FsContext& fs, const WriteCall& call, const IoSpan& span, RequestStagingScope& staging,
                   bool may_wait = true) {
  const uint64_t ino = call.ino;
  const uint64_t off = call.offset;
  const uint64_t size = call.size;
  const uint64_t len = (size + kBlock - 1) / kBlock * kBlock;
  const char* data = call.data;
  if (!(may_wait ? fs.gates.lock_shared_write(ino, span) : fs.gates.try_lock_shared_write(ino, span))) return false;
  // Over the file's tail block: the exclusive path writes the tail back
  // first, so that no later write-back puts its older bytes over these.
  if (fs.tails.overlaps(ino, off, off + len)) {
    fs.gates.unlock_shared_write(ino, span);
    return false;
  }
  // A page-cache writeback answered now, before its IO (write_behind.h).
  // Any write over bytes an answered write still carries takes the
  // exclusive path, which waits for it: two writes of one block in flight
  // at once could land in either order.
  bool answered = false;
  bool fsynced_lately = false;
  if (fs.write_behind.enabled()) {
    answered = call.marks.from_page_cache && fs.write_behind.admit(ino, off, off + len, off + size, &fsynced_lately);
    if (!answered && fs.write_behind.overlaps(ino, off, off + len)) {
      fs.gates.unlock_shared_write(ino, span);
      return false;
    }
  }
  // On io-uring the data stays in the ring entry until the reply, page
  // aligned: the members write it from there, with no copy and no buffer
  // (a 1 MiB write's copy was the ring thread's largest cost, and the
  // buffers doubled a write flood's memory). An answered write keeps a
  // copy of its own.
  const bool in_place =
      !answered && len == size && call.marks.held_until_reply && reinterpret_cast<uintptr_t>(data) % kBlock == 0;
  WriteOp* op = fs.op_pools.writes.get(in_place ? 0 : len);
  op->ranges.clear();
  op->span = span;
  // The shared gate, held until finish(), keeps truncate and hole punching
  // away, as prepare_write's rewrite_done asks.
  op->kernel_stamped = call.marks.from_page_cache;
  int rc = fs.meta.prepare_write(ino, off, len, &op->ranges, &op->rewrite_done, nullptr, op->kernel_stamped);
  if (rc != 0) {
    if (answered) fs.write_behind.withdraw(ino, off, off + len);
    fs.gates.unlock_shared_write(ino, span);
    fs.op_pools.writes.put(op);
    refuse(fs, call, -rc);
    return true;
  }
  fs.data_op_started();
  if (!in_place) op->buffer.reserve(len);
  op->reqs.ensure(op->ranges.size());
  op->error.store(0);
  op->reply = call.reply;
  op->fs = &fs;
  op->ino = ino;
  op->size = size;
  op->new_end = off + size;
  op->blocks_end = off + len;
  std::byte* source = in_place ? reinterpret_cast<std::byte*>(const_cast<char*>(data)) : op->buffer.data();
  if (!in_place) {
    std::memcpy(source, data, size);
    std::memset(source + size, 0, len - size);
  }
  op->answered = answered;
  op->awaited_soon = answered && fsynced_lately;
  op->may_hold = answered && !op->awaited_soon && call.marks.on_ring;
  if (answered) {
    // Reads of these bytes wait for the IO from now on; then the kernel
    // may have its page back. Its blocks are allocated already and
    // st_blocks counts them: the kernel hears so now, while the request is
    // its (not from the completion, which may meet an unmount).
    fs.gates.mark_answered(ino, span);
    blocks_changed(fs, ino, op->ranges);
    call.reply.written(static_cast<uint32_t>(size));
  }
  op->pending.store(static_cast<uint32_t>(op->ranges.size()) + 1);
  Submitter* sub = fs.submitter_of(call.thread);
  stage_extent_writes(op, sub, source, off);
  // An answered write's IO is handed on at once, never left staged for
  // the next request: the kernel, already answered, may end the session
  // first (SIGTERM right after a close), and a libfuse worker that sees
  // that after this request leaves without reading again, its staged IO
  // never sent and the daemon waiting for it at unmount (seen once:
  // MemberLocksTest, data ops stuck at 4 with every drive idle).
  if (sub != nullptr) {
    if (answered) {
      staging.hand_on_now(*sub, op->may_hold);
    } else {
      staging.end(*sub, call.marks.may_stay_staged);
    }
  }
  if (op->pending.fetch_sub(1) == 1) finish(op);
  return true;
}

// The tail's write-back in write_holding_gate, completing as its other IO
// does.
class ReapingHereIo final : public VolumeIo {
 public:
  ReapingHereIo(EngineVolumeIo& io, bool* waited) : io_(io), waited_(waited) {}
  uint64_t size() const override { return io_.size(); }
  int read(uint64_t offset, std::span<std::byte> out) override { return io_.read_here(offset, out, waited_); }
  int write(uint64_t offset, std::span<const std::byte> data) override { return io_.write_here(offset, data, waited_); }
  int flush() override { return io_.flush(); }

 private:
  EngineVolumeIo& io_;
  bool* waited_;
};

// Partial blocks, with the file's gate held exclusively: read the blocks
// that hold data, patch, write back. The member IO completes on this
// thread where the member finishes it inline (a small append's two IOs
// would otherwise cost four context switches); *waited: some of it did not.
// kernel_stamped: a page-cache writeback, whose times the kernel set.
int write_holding_gate(FsContext& fs, uint64_t ino, const char* data, uint64_t size, uint64_t off, bool kernel_stamped,
                       bool* waited) {
  std::vector<meta::WriteRange> ranges;
  uint64_t size_before = 0;
  int rc = fs.meta.prepare_write(ino, off, size, &ranges, nullptr, &size_before, kernel_stamped);
  if (rc != 0) return rc;
  uint64_t astart = off / kBlock * kBlock;
  uint64_t aend = (off + size + kBlock - 1) / kBlock * kBlock;
  // Inside the file's tail block and growing the file: patched in memory
  // before the new size is journaled, and that record makes the next
  // commit write the block back first (tail_blocks.h). Only growing
  // writes: a rewrite within the size journals nothing (its times are
  // deferred), and nothing would make a commit come for it.
  if (aend - astart == kBlock && off + size > size_before && ranges.size() == 1 && ranges[0].written &&
      fs.tails.absorb(ino, off, ranges[0].vol_off, reinterpret_cast<const std::byte*>(data), size)) {
    return fs.meta.complete_write(ino, ranges, off + size, kernel_stamped);
  }
  // Any other write of the file writes its tail back first: that block
  // may be an edge block here, and a file keeps one tail.
  ReapingHereIo here(fs.sync_io, waited);
  rc = fs.tails.write_back_and_drop(ino, here, waited);
  if (rc != 0) return rc;
  auto buf = AlignedBuffer::uninitialised(aend - astart);
  // The edge blocks: their bytes outside [off, off + size) come from the
  // volume if the block holds written data, and are zeros otherwise.
  uint64_t edges[2] = {astart, aend - kBlock};
  for (uint64_t edge : edges) {
    std::byte* dst = buf.data() + (edge - astart);
    std::memset(dst, 0, kBlock);
    for (const meta::WriteRange& w : ranges) {
      if (!w.written || edge < w.file_off || edge >= w.file_off + w.len) continue;
      rc = fs.sync_io.read_here(w.vol_off + (edge - w.file_off), std::span<std::byte>(dst, kBlock), waited);
      if (rc != 0) return rc;
    }
  }
  std::memcpy(buf.data() + (off - astart), data, size);
  for (const meta::WriteRange& w : ranges) {
    rc =
        fs.sync_io.write_here(w.vol_off, std::span<const std::byte>(buf.data() + (w.file_off - astart), w.len), waited);
    if (rc != 0) return rc;
  }
  rc = fs.meta.complete_write(ino, ranges, off + size, kernel_stamped);
  if (rc != 0) return rc;
  blocks_changed(fs, ino, ranges);
  // A partial last block, now on the members and marked written: the next
  // small write of the file (an append) patches it in memory.
  const uint64_t last = aend - kBlock;
  if ((off + size) % kBlock != 0 && fs.tails.enabled()) {
    for (const meta::WriteRange& w : ranges) {
      if (last >= w.file_off && last < w.file_off + w.len) {
        fs.tails.keep(ino, last, w.vol_off + (last - w.file_off), buf.data() + (last - astart));
      }
    }
  }
  return 0;
}

// Partial blocks (or bytes the page cache may hold), on a thread that may
// wait. *cached: the page cache may hold the bytes.
int write_exclusive(FsContext& fs, const WriteCall& call, const IoSpan& span, bool* cached) {
  ExclusiveGate gate(fs.gates, call.ino);
  *cached = fs.gates.page_cache_holds(call.ino, span);
  bool waited = false;
  return write_holding_gate(fs, call.ino, call.data, call.size, call.offset, call.marks.from_page_cache, &waited);
}

IoSpan span_of(const WriteCall& call) {
  // Writeback of the kernel's own pages is not ordered (transport/request_marks.h):
  // a store into those pages would wait for the kernel that waits for us.
  return IoSpan{call.marks.from_page_cache ? 0 : call.marks.unique, call.offset, call.offset + call.size};
}

}  // namespace

// The rings' tries of the aligned path (transport.h): false, having done
// nothing, for serve_write on a thread that may wait.
static bool try_aligned_path(FsContext& fs, const WriteCall& call, bool may_wait) {
  if (fs.read_only || call.size == 0 || call.offset % kBlock != 0) return false;
  RequestStagingScope staging(fs, call.thread);
  // As in serve_write: the file's suid/sgid first (a metadata change, no
  // IO; done again, harmlessly, if the aligned path declines).
  if (call.marks.kill_suidgid) {
    if (int rc = drop_suidgid_for_write(call.caller, fs, call.ino); rc != 0) {
      refuse(fs, call, -rc);
      return true;
    }
  }
  if (write_aligned(fs, call, span_of(call), staging, may_wait)) return true;
  staging.leave_as_it_was();
  return false;
}

bool try_serve_page_cache_write(FsContext& fs, const WriteCall& call) {
  return call.marks.from_page_cache && try_aligned_path(fs, call, true);
}

bool try_serve_aligned_write(FsContext& fs, const WriteCall& call) {
  return call.size % kBlock == 0 && try_aligned_path(fs, call, false);
}

bool try_serve_write_without_waiting(FsContext& fs, const WriteCall& call) {
  // The rare cases are the blocking path's.
  if (fs.read_only || call.size == 0) return false;
  // A member with latency made the last try wait: hand the next ones on
  // (one in kPartialWritesHandedOnAfterWait + 1 tries again, as the
  // volume's members do not change but its load does).
  for (uint32_t n = fs.partial_writes_to_hand_on.load(std::memory_order_relaxed); n != 0;) {
    if (fs.partial_writes_to_hand_on.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return false;
  }
  const IoSpan span = span_of(call);
  if (!fs.gates.try_lock_exclusive(call.ino)) return false;
  // That answer stores into the page cache, which may wait for the kernel.
  if (fs.gates.page_cache_holds(call.ino, span)) {
    fs.gates.unlock_exclusive(call.ino);
    return false;
  }
  RequestStagingScope staging(fs, call.thread);
  bool waited = false;
  // Every write by a caller without CAP_FSETID carries the mark: as in
  // serve_write, the file's suid/sgid go first.
  int rc = call.marks.kill_suidgid ? drop_suidgid_for_write(call.caller, fs, call.ino) : 0;
  if (rc == 0)
    rc = write_holding_gate(fs, call.ino, call.data, call.size, call.offset, call.marks.from_page_cache, &waited);
  fs.gates.unlock_exclusive(call.ino);
  if (waited) fs.partial_writes_to_hand_on.store(kPartialWritesHandedOnAfterWait, std::memory_order_relaxed);
  if (rc != 0) {
    refuse(fs, call, -rc);
  } else {
    call.reply.written(call.size);
  }
  return true;
}

void serve_write(FsContext& fs, const WriteCall& call) {
  RequestStagingScope staging(fs, call.thread);
  // Here, not in the libfuse table: the rings' own WRITEs never pass it.
  if (fs.read_only) {
    call.reply.error(EROFS);
    return;
  }
  // A write by a caller without CAP_FSETID takes the file's suid/sgid
  // first, as on a local filesystem (the kernel leaves it to us).
  if (call.marks.kill_suidgid) {
    if (int rc = drop_suidgid_for_write(call.caller, fs, call.ino); rc != 0) {
      refuse(fs, call, -rc);
      return;
    }
  }
  if (call.size == 0) {
    call.reply.written(0);
    return;
  }
  const uint64_t off = call.offset;
  const IoSpan span = span_of(call);
  // A page-cache writeback ends on a block or at the file's end (the
  // kernel's size, which cuts its last page): either way aligned.
  const bool ends_aligned = call.size % kBlock == 0 || call.marks.from_page_cache;
  if (off % kBlock == 0 && ends_aligned && write_aligned(fs, call, span, staging)) return;
  bool cached = false;
  int rc = write_exclusive(fs, call, span, &cached);
  // Before the reply: a store into the page cache may wait for pages
  // whose reads are staged in this thread's batch.
  staging.hand_on_before_reply();
  if (rc != 0) {
    refuse(fs, call, -rc);
  } else if (cached) {
    fs.store_then_reply(call.reply, call.ino, off, call.data, call.size);
  } else {
    call.reply.written(call.size);
  }
}

// A ring's own READ and WRITE (transport.h).
void FsContext::run_write(const WriteCall& call) { serve_write(*this, call); }
bool FsContext::try_run_page_cache_write(const WriteCall& call) { return try_serve_page_cache_write(*this, call); }
bool FsContext::try_run_aligned_write(const WriteCall& call) { return try_serve_aligned_write(*this, call); }
bool FsContext::try_run_write_without_waiting(const WriteCall& call) {
  return try_serve_write_without_waiting(*this, call);
}

}  // namespace peregrine::fs
