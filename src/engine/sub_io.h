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

struct SubmitterSlot {
  uint32_t index = 0;
  std::atomic<bool> in_use{false};

  // Pool. `free` is the owner thread's; returns[d] is filled by drive d's
  // thread and drained by the owner.
  std::vector<SubIo> pool;
  std::vector<uint32_t> free;
  std::vector<std::unique_ptr<SubIoReturnQueue>> returns;
  std::atomic<uint32_t> return_epoch{0};
  std::atomic<bool> waiting_for_returns{false};

  // Staging, owner thread only: per-drive plug lists for the per-drive
  // scheduler (the per-volume one keeps its own: PerVolumeScheduler), and
  // what either has staged since its last unplug.
  std::vector<std::vector<SubIo*>> plug;
  std::vector<uint32_t> served_inline;  // drives unplug() dispatched to inline
  std::vector<uint32_t> inline_candidates;  // drives unplug() may dispatch to inline
  uint32_t batch = 0;
};

}  // namespace peregrine
