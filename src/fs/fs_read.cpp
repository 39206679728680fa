// read: map the file range to volume extents, send one engine request per
// extent, and answer FUSE from the drive thread that completes the last
// one. Holes and unwritten extents are zeros, never volume bytes. A file's
// tail block kept in memory (tail_blocks.h) is laid over what the members
// return. A read inside one block is answered from that block when it is
// kept (read_blocks.h), and keeps it otherwise. Both transports call
// serve_read() (transport/data_calls.h).
#include <cerrno>
#include <cstring>
#include <vector>

#include "data_ops.h"
#include "fs_context.h"
#include "request_staging.h"

namespace peregrine::fs {
namespace {

void finish(ReadOp* op) {
  int err = op->error.load();
  if (err == 0 && op->tail_off != ReadOp::kNoTail) {
    std::memcpy(op->data + (op->tail_off - op->data_start), op->tail.data(), kBlock);
  }
  // Only if no writer entered the gate while the members were read: the
  // bytes are then the file's as of now.
  if (err == 0 && op->keep_generation != 0 && op->fs->gates.write_generation(op->ino) == op->keep_generation) {
    op->fs->read_blocks.keep(op->ino, op->data_start, op->keep_vol_off, op->keep_generation, op->data);
  }
  if (err != 0) {
    op->reply.error(-err);
  } else {
    op->reply.bytes(op->data + op->reply_offset, op->reply_length);
  }
  FsContext* fs = op->fs;
  fs->gates.unlock_shared(op->ino);
  fs->op_pools.reads.put(op);
  fs->data_op_finished();
}

void on_extent_read(Request& r, int result) {
  auto* op = static_cast<ReadOp*>(r.context);
  if (result != 0) {
    int expected = 0;
    op->error.compare_exchange_strong(expected, result);
  }
  if (op->pending.fetch_sub(1) == 1) finish(op);
}

// The blocks a read covers: [start, end) of the file, the caller's bytes
// from `off` to `data_end` within it.
struct ReadSpan {
  uint64_t off = 0;
  uint64_t data_end = 0;  // the end of the file's bytes in the read
  uint64_t start = 0;     // off, down to a block
  uint64_t end = 0;       // data_end, up to a block
};

// Phase 1: the extents under the read, with the file's gate held. False
// when the read is answered already (an error, or at or past the end of
// the file) and the gate released.
bool map_extents(FsContext& fs, const ReadCall& call, uint64_t* generation, std::vector<meta::Segment>* segs,
                 uint64_t* file_size) {
  const uint64_t off = call.offset;
  const uint64_t size = call.size;
  fs.gates.lock_shared_read(call.ino, IoSpan{call.marks.unique, off, off + size}, call.marks.fills_page_cache,
                            fs.read_blocks.enabled() && size < kBlock ? generation : nullptr);
  segs->clear();
  bool atime_due = false;
  int rc = fs.meta.map_read(call.ino, off, size, segs, &atime_due, file_size);
  // The kernel keeps no access times for FUSE inodes (S_NOATIME): the
  // daemon does, and tells the kernel its cached ones are stale.
  if (atime_due && !call.marks.no_atime && fs.meta.accessed(call.ino)) attributes_changed(fs, call.ino);
  if (rc == 0 && !segs->empty()) return true;
  fs.gates.unlock_shared(call.ino);
  if (rc != 0) {
    call.reply.error(-rc);
  } else {
    call.reply.bytes(nullptr, 0);
  }
  return false;
}

// Phase 2: less than a block (only those were given a generation) of
// written data, inside one block, answered from memory if that block is
// kept. (A whole-block read, the usual random read, would only pay a copy
// to keep what it rarely reads again.) Otherwise says, in *generation and
// *keep_vol_off, whether the block is to be kept once read.
bool answer_from_kept_block(FsContext& fs, const ReadCall& call, const ReadSpan& span, ReadOp* op,
                            uint64_t* generation, uint64_t* keep_vol_off) {
  const std::vector<meta::Segment>& segs = op->segs;
  if (*generation == 0 || span.end - span.start != kBlock || segs.size() != 1 ||
      segs[0].kind != meta::Segment::kData) {
    *generation = 0;
    return false;
  }
  *keep_vol_off = segs[0].vol_off - (segs[0].file_off - span.start);
  // Without a reply area of the transport's (classic), the reply is
  // written from the op's buffer.
  std::byte* out = call.reply_area;
  if (call.reply_area_size < kBlock) {
    op->buffer.reserve(kBlock);
    out = op->buffer.data();
  }
  if (!fs.read_blocks.copy(call.ino, span.start, *keep_vol_off, *generation, span.off - span.start,
                           span.data_end - span.off, out))
    return false;
  fs.gates.unlock_shared(call.ino);
  call.reply.bytes(out, span.data_end - span.off);
  return true;
}

// Phase 3: the op answers the read once its member reads complete; the
// room they go to: straight into the reply's place when the transport has
// one and the read starts on a block (the caller's bytes are then at its
// start), else the op's own buffer. The file's tail block, newer than the
// members' copy, is taken now, under the gate.
void prepare_read_op(FsContext& fs, const ReadCall& call, const ReadSpan& span, ReadOp* op, size_t data_segments,
                     uint64_t generation, uint64_t keep_vol_off) {
  fs.data_op_started();
  const uint64_t bytes = span.end - span.start;
  const bool in_place = call.reply_area != nullptr && span.start == span.off && bytes <= call.reply_area_size;
  if (in_place) {
    op->data = call.reply_area;
  } else {
    op->buffer.reserve(bytes);
    op->data = op->buffer.data();
  }
  op->reqs.ensure(data_segments);
  op->error.store(0);
  op->reply = call.reply;
  op->fs = &fs;
  op->ino = call.ino;
  op->reply_offset = span.off - span.start;
  op->reply_length = span.data_end - span.off;
  op->data_start = span.start;
  op->tail_off = ReadOp::kNoTail;
  op->keep_generation = generation;
  op->keep_vol_off = keep_vol_off;
  if (!fs.tails.empty()) {
    op->tail.reserve(kBlock);
    if (!fs.tails.copy_if_inside(call.ino, span.start, span.end, &op->tail_off, op->tail.data()))
      op->tail_off = ReadOp::kNoTail;
  }
  // The guard count (+1) keeps the op alive until every request is added.
  op->pending.store(static_cast<uint32_t>(data_segments) + 1);
}

// Phase 4: one member read per data extent, staged on this thread's
// submitter (whole blocks around the extent: extents are block-granular);
// holes are zeros at once. `via_page_cache`: see reads_via_member_cache().
void stage_extent_reads(ReadOp* op, Submitter* sub, const std::vector<meta::Segment>& segs, bool via_page_cache) {
  size_t k = 0;
  for (const meta::Segment& s : segs) {
    std::byte* dst = op->data + (s.file_off - op->data_start);
    if (s.kind == meta::Segment::kZero) {
      std::memset(dst, 0, s.len);
      continue;
    }
    uint64_t bstart = s.file_off / kBlock * kBlock;
    uint64_t bend = (s.file_off + s.len + kBlock - 1) / kBlock * kBlock;
    Request& r = op->reqs[k++];
    r.op = IoOp::read;
    r.offset = s.vol_off - (s.file_off - bstart);
    r.length = bend - bstart;
    r.buffer = op->data + (bstart - op->data_start);
    r.on_complete = &on_extent_read;
    r.context = op;
    r.via_page_cache = via_page_cache;
    int src = sub == nullptr ? -EAGAIN : sub->add(r);
    if (src != 0) on_extent_read(r, src);
  }
}

// Whether a read goes through the members' own page cache: one the
// kernel's page cache asked for, of a file packed among the small files
// (member_cache_file_bytes()). A tree is read in about the order it was
// written, so the files after this one lie after it on each member, and
// the member's read-ahead reads them with it: one wait for the drive per
// read-ahead window rather than per file. Larger files are read in large
// pieces and stay direct, as do O_DIRECT reads: their bytes are cached
// once, in the kernel's page cache of the file, or nowhere.
bool reads_via_member_cache(const FsContext& fs, const ReadCall& call, uint64_t file_size) {
  return call.marks.fills_page_cache && file_size <= fs.member_cache_file_bytes;
}

}  // namespace

void serve_read(FsContext& fs, const ReadCall& call) {
  RequestStagingScope staging(fs, call.thread);
  // Taken first: its segment list, reused from op to op, holds the
  // extents, so that a read allocates nothing once warm. Its buffer is
  // wanted only when the transport has no reply area.
  ReadOp* op = fs.op_pools.reads.get(call.reply_area != nullptr ? 0 : call.size);
  const std::vector<meta::Segment>& segs = op->segs;
  uint64_t generation = 0;
  uint64_t file_size = 0;
  if (!map_extents(fs, call, &generation, &op->segs, &file_size)) {
    fs.op_pools.reads.put(op);
    return;
  }
  ReadSpan span;
  span.off = call.offset;
  span.data_end = segs.back().file_off + segs.back().len;
  span.start = span.off / kBlock * kBlock;
  span.end = (span.data_end + kBlock - 1) / kBlock * kBlock;
  uint64_t keep_vol_off = 0;
  if (answer_from_kept_block(fs, call, span, op, &generation, &keep_vol_off)) {
    fs.op_pools.reads.put(op);
    return;
  }
  size_t data_segments = 0;
  for (const meta::Segment& s : segs) data_segments += s.kind == meta::Segment::kData;
  prepare_read_op(fs, call, span, op, data_segments, generation, keep_vol_off);
  Submitter* sub = fs.submitter_of(call.thread);
  stage_extent_reads(op, sub, segs, reads_via_member_cache(fs, call, file_size));
  if (sub != nullptr) staging.end(*sub, call.marks.may_stay_staged);
  if (op->pending.fetch_sub(1) == 1) finish(op);
}

// A ring's own READ and WRITE (transport.h).
void FsContext::run_read(const ReadCall& call) { serve_read(*this, call); }

}  // namespace peregrine::fs
