// SubIo: the piece of a Request that falls in one stripe unit of one member,
// and SubmitterSlot: the per-submitting-thread state that owns a pool of
// them. Internal to the engine.
//
// Thread rules: a SubIo is taken from its slot's pool by the submitting
// thread, travels to the drive (SPSC inbox), is dispatched and completed by
// the holder of that drive's dispatch lock, and is handed back by the drive
// thread through the slot's per-drive return queue (SPSC again). So no
// SubIo is ever touched by two threads at once, and none is heap-allocated
// on the IO path.
#pragma once

#include <boost/lockfree/spsc_queue.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "peregrine/engine/drive_stats.h"
#include "peregrine/engine/engine_config.h"
#include "peregrine/engine/request.h"

namespace peregrine {

struct SubmitterSlot;

struct SubIo {
  Request* parent = nullptr;
  SubmitterSlot* owner = nullptr;
  std::byte* buffer = nullptr;
  uint64_t member_offset = 0;
  uint64_t arrival_ns = 0;
  uint64_t seq = 0;  // arrival order on its drive: ties in the sort keep it
  uint32_t length = 0;
  uint32_t id = 0;  // index in the owner's pool
  IoOp op = IoOp::read;
  // The request's (Request::via_page_cache), copied so that the merge loop
  // need not load the parent: merges with its own kind only.
  bool via_page_cache = false;
  bool retried = false;  // sent again alone after its merged IO failed (Drive::retry_unmerged)

  // A dispatched IO is a chain of neighbouring SubIos; the head holds the
  // chain's totals. Valid only between merge and completion.
  SubIo* next = nullptr;          // next SubIo of the same IO
  SubIo* chain_tail = nullptr;    // head only
  SubIo* backlog_next = nullptr;  // head only: next IO waiting for a tag
  uint64_t chain_bytes = 0;       // head only
  uint32_t chain_count = 0;       // head only
};

using SubIoQueue = boost::lockfree::spsc_queue<SubIo*>;
using SubIoReturnQueue = boost::lockfree::spsc_queue<uint32_t>;

// What one slot's thread moved on one drive itself (Drive::transfer_direct):
// written by that thread alone, with plain stores, so that the IO shares no
// cache line with the other submitters; summed by Engine::stats().
struct alignas(64) DirectCounts {
  std::atomic<uint64_t> ios{0};
  std::atomic<uint64_t> read_ios{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_written{0};

  void count(IoOp op, uint64_t bytes) {
    bump(ios, 1);
    if (op == IoOp::read) {
      bump(read_ios, 1);
      bump(bytes_read, bytes);
    } else {
      bump(bytes_written, bytes);
    }
  }
  // Any thread.
  void add_to(DriveStats& s) const {
    const uint64_t n = ios.load(std::memory_order_relaxed);
    const uint64_t reads = read_ios.load(std::memory_order_relaxed);
    s.subios += n;
    s.ios += n;
    s.read_ios += reads;
    s.write_ios += n - reads;
    s.bytes_read += bytes_read.load(std::memory_order_relaxed);
    s.bytes_written += bytes_written.load(std::memory_order_relaxed);
  }

 private:
  static void bump(std::atomic<uint64_t>& a, uint64_t n) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

// A request that is one piece on a memory member, kept aside by add() for
// the submitting thread to move itself (Submitter::move_direct_pieces).
struct DirectPiece {
  Request* request;
  uint32_t drive;
  uint64_t member_offset;
};

struct SubmitterSlot {
  uint32_t index = 0;
  std::atomic<bool> in_use{false};

  // Pool. `free` is the owner thread's; returns[d] is filled by drive d's
  // thread and drained by the owner. The queues of the first return_count
  // drives exist; a drive added online (Engine::add_drive) gets one in
  // every slot before any IO can reach it. return_storage owns them and
  // is touched only under the engine's slots mutex.
  std::vector<SubIo> pool;
  std::vector<uint32_t> free;
  std::atomic<SubIoReturnQueue*> returns[kEngineMaxDrives] = {};
  std::atomic<uint32_t> return_count{0};
  std::vector<std::unique_ptr<SubIoReturnQueue>> return_storage;
  std::atomic<uint32_t> return_epoch{0};
  std::atomic<bool> waiting_for_returns{false};

  // Staging, owner thread only: per-drive plug lists for the per-drive
  // scheduler (the per-volume one keeps its own: PerVolumeScheduler), and
  // what either has staged since its last unplug. kEngineMaxDrives lists, so
  // that a drive added online needs nothing of the owner.
  std::vector<std::vector<SubIo*>> plug;
  std::vector<uint32_t> served_inline;  // drives unplug() dispatched to inline
  std::vector<uint32_t> inline_candidates;  // drives unplug() may dispatch to inline
  // Lone pieces on memory members (Submitter::add), each request whole in
  // one piece: moved by this thread at its next unplug.
  std::vector<DirectPiece> direct;
  std::unique_ptr<DirectCounts[]> direct_counts;  // kEngineMaxDrives
  uint32_t batch = 0;

  // For an online restripe's start (Engine::begin_restripe), which must
  // know when every request this slot staged before it is on the drives:
  // `staged` is set before a read or write looks at the layout fence and
  // cleared by the unplug after it, which also counts `unplugs`. Written
  // by the owner with sequentially consistent stores, once per batch.
  std::atomic<bool> staged{false};
  std::atomic<uint64_t> unplugs{0};

  // Drive d's return queue. Drive threads and the owner.
  SubIoReturnQueue& returns_of(uint32_t d) { return *returns[d].load(std::memory_order_acquire); }
  uint32_t drives_returning() const { return return_count.load(std::memory_order_acquire); }
};

}  // namespace peregrine
