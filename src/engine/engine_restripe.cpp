// The engine's side of an online restripe (Engine::add_drive and the
// restripe calls of engine.h): new drives while IO runs, and the layout
// fence (layout_fence.h) around the windows the restripe moves.
#include <cerrno>
#include <string>
#include <thread>

#include "cpu_placement.h"
#include "drive.h"
#include "drive_thread.h"
#include "layout_fence.h"
#include "peregrine/engine/engine.h"

namespace peregrine {

Status Engine::add_drive(const DriveSpec& spec, std::unique_ptr<DeviceQueue> device) {
  const uint32_t index = drive_count();
  if (index >= kEngineMaxDrives)
    return Status::error(EINVAL, "engine: already " + std::to_string(kEngineMaxDrives) + " member drives");
  if (spec.queue_depth == 0 || spec.queue_depth > 65536)
    return Status::error(EINVAL, "engine: drive " + spec.name + ": queue depth must be 1..65536");
  auto drive = std::make_unique<Drive>(index, config_, std::move(device), spec.queue_depth);
  // A thread of its own (the others' drives stay where they are), on the
  // CPU a mount over all the drives would place this one on.
  int cpu = -1;
  {
    MutexLock lock(threads_mutex_);
    std::vector<int> nodes = drive_nodes_;
    nodes.push_back(spec.numa_node);
    if (config_.pin_drive_threads) cpu = place_drive_threads(nodes, config_.drive_cpus, placement_cpus_)[index];
  }
  auto thread = DriveThread::create({drive.get()}, cpu, "pg-drive-" + std::to_string(index));
  if (!thread) return Status::error(thread.status().errnum(), "drive thread: " + thread.status().message());
  if (Status s = (*thread)->attach_drives(); !s) return Status::error(s.errnum(), "drive thread: " + s.message());
  {
    // Every slot can take the drive's returns before a SubIo can reach it.
    MutexLock lock(slots_mutex_);
    for (auto& slot : slots_) {
      slot->return_storage.push_back(std::make_unique<SubIoReturnQueue>(slot->pool.size()));
      slot->returns[index].store(slot->return_storage.back().get(), std::memory_order_release);
      slot->return_count.store(index + 1, std::memory_order_release);
    }
    drives_[index] = std::move(drive);
    drive_count_.store(index + 1, std::memory_order_release);
  }
  MutexLock lock(threads_mutex_);
  drive_nodes_.push_back(spec.numa_node);
  threads_.push_back(std::move(*thread));
  threads_.back()->start();
  return Status::ok();
}

void Engine::resubmit(const std::vector<Request*>& parked, Submitter& via) {
  for (Request* r : parked) {
    // Checked when it came: it fits the volume, which has not shrunk.
    [[maybe_unused]] int rc = via.add(*r);
  }
  via.unplug();
}

bool Engine::drain_unfenced(std::chrono::steady_clock::time_point deadline) {
  // 1. Each slot's requests that saw the fence inactive: staged before its
  // `staged` flag was seen set (the store and the fence's load are
  // sequentially consistent on both sides), so they are on the drives once
  // the flag is seen clear or the slot unplugged since.
  std::vector<SubmitterSlot*> slots;
  {
    MutexLock lock(slots_mutex_);
    for (auto& s : slots_) slots.push_back(s.get());
  }
  for (SubmitterSlot* slot : slots) {
    if (!slot->staged.load()) continue;
    const uint64_t unplugs = slot->unplugs.load();
    while (slot->staged.load() && slot->unplugs.load() == unplugs) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
  // 2. Blocking transfers that saw it inactive.
  while (lone_transfers_.load() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  // 3. Everything on the drives; nothing new arrives there meanwhile (the
  // fence holds all new requests back).
  while (outstanding() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    dispatch_held();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

Status Engine::begin_restripe(uint32_t new_count, Submitter& via, std::chrono::milliseconds drain_limit) {
  if (config_.scheduler != Scheduler::per_drive)
    return Status::error(EOPNOTSUPP, "engine: an online restripe needs the per-drive scheduler");
  if (map_.restriping()) return Status::error(EBUSY, "engine: a restripe is in progress");
  if (new_count <= map_.members() || new_count > drive_count())
    return Status::error(EINVAL, "engine: cannot restripe onto " + std::to_string(new_count) + " of " +
                                     std::to_string(drive_count()) + " drives");
  // The fence first: every request from now on is held back until the
  // drain is done, and only then sees the new map.
  fence_->close(0, 0, /*all=*/true);
  fence_->set_active(true);
  map_.begin_restripe(new_count);
  const bool drained = drain_unfenced(std::chrono::steady_clock::now() + drain_limit);
  if (!drained) {
    // Nothing moved: the old layout alone again, and the fence off for
    // requests to come (those it registered complete through it).
    fence_->set_active(false);
    map_.cancel_restripe();
  }
  resubmit(fence_->open(), via);
  if (!drained)
    return Status::error(ETIMEDOUT, "engine: the volume's IO did not drain within " +
                                        std::to_string(drain_limit.count()) + " ms to start the restripe");
  return Status::ok();
}

void Engine::close_window(uint64_t begin, uint64_t end) {
  fence_->close(begin, end);
  fence_->wait_clear(begin, end);
}

void Engine::open_window(uint64_t cursor, Submitter& via) {
  if (cursor > map_.restripe_cursor()) map_.advance_restripe(cursor);
  resubmit(fence_->open(), via);
}

void Engine::finish_restripe() {
  map_.finish_restripe();
  fence_->set_active(false);
}

size_t Engine::restripe_parked() const { return fence_->parked(); }
size_t Engine::restripe_in_flight() const { return fence_->in_flight(); }
std::pair<uint64_t, uint64_t> Engine::restripe_window() const { return fence_->closed_window(); }

}  // namespace peregrine
