// ReadOp and WriteOp: what one READ or WRITE holds while its member IO
// runs (fs_read.cpp and fs_write.cpp fill, complete and answer them), and
// DataOpPools, their free lists: one per mounted filesystem, a member of
// FsContext, so that nothing of a mount's data path lives in a global.
//
// Thread rules: an op belongs to the thread serving its request until its
// member IO is sent, then to the thread that completes the last piece (a
// drive thread, or a FUSE thread reaping inline), which answers the
// request and gives the op back. The pools are lock-free (op_pool.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "op_pool.h"
#include "peregrine/fs/io_gates.h"
#include "peregrine/meta/metadata.h"
#include "peregrine/util/aligned_buffer.h"
#include "request_slots.h"
#include "transport/data_calls.h"

namespace peregrine::fs {

struct FsContext;

// The block reads and writes are aligned to: the metadata's, which maps a
// file in whole blocks.
inline constexpr uint64_t kBlock = meta::kBlockSize;

struct ReadOp {
  DataReply reply;
  FsContext* fs = nullptr;
  uint64_t ino = 0;
  AlignedBuffer buffer;       // the op's own room for the data, when not in place
  std::byte* data = nullptr;  // covers [aligned_start, aligned_end) of the file:
                              // buffer, or the transport's reply area
  uint64_t reply_offset = 0;  // where the caller's bytes start in data
  uint64_t reply_length = 0;
  uint64_t data_start = 0;  // the file offset of data[0]
  // The file's tail block (tail_blocks.h) when it lies in the range: newer
  // than the members' copy, laid over it before the reply.
  static constexpr uint64_t kNoTail = UINT64_MAX;
  uint64_t tail_off = kNoTail;
  AlignedBuffer tail;  // one block (4 KiB), made on first use
  // A read inside one block, entered under this write generation (0: not
  // to be kept), of the block at keep_vol_off: kept once read.
  uint64_t keep_generation = 0;
  uint64_t keep_vol_off = 0;
  // The read's extents (Metadata::map_read), reused from op to op.
  std::vector<meta::Segment> segs;
  RequestSlots reqs;
  std::atomic<uint32_t> pending{0};
  std::atomic<int> error{0};
};

struct WriteOp {
  DataReply reply;
  FsContext* fs = nullptr;
  uint64_t ino = 0;
  uint64_t size = 0;
  uint64_t new_end = 0;
  IoSpan span;                 // as the kernel sent it, for the gate
  bool rewrite_done = false;   // prepare_write set the times: nothing to complete
  bool kernel_stamped = true;  // a page-cache writeback: the kernel set the times
  bool answered = false;       // answered before its IO (write_behind.h)
  bool awaited_soon = false;   // answered, of a file fsync'd lately (WriteBehind::admit)
  bool may_hold = false;       // answered, and its IO may wait for neighbours (Request::may_hold)
  uint64_t blocks_end = 0;     // the block after the last it writes
  AlignedBuffer buffer;
  std::vector<meta::WriteRange> ranges;
  RequestSlots reqs;
  std::atomic<uint32_t> pending{0};
  std::atomic<int> error{0};
};

// Each keeps at most 16 + 32 MiB of idle buffers (op_pool.h).
struct DataOpPools {
  OpPool<ReadOp> reads{256, 32};
  OpPool<WriteOp> writes{256, 32};
};

}  // namespace peregrine::fs
