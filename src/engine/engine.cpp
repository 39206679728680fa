#include "peregrine/engine/engine.h"

#include <cerrno>
#include <string>

#include "cpu_placement.h"
#include "drive.h"
#include "drive_thread.h"
#include "layout_fence.h"

namespace peregrine {
namespace {

Status check_config(const EngineConfig& c, const StripeMap& map, const std::vector<DriveSpec>& drives) {
  auto bad = [](const std::string& what) { return Status::error(EINVAL, "engine: " + what); };
  if (drives.empty()) return bad("no member drives");
  if (drives.size() > kEngineMaxDrives) return bad("more than " + std::to_string(kEngineMaxDrives) + " member drives");
  if (drives.size() != map.members()) return bad("drive count does not match the stripe map");
  uint32_t unit = map.stripe_unit();
  if (unit < 4096 || unit > (1u << 20) || (unit & (unit - 1)) != 0)
    return bad("stripe unit " + std::to_string(unit) + " is not a power of two between 4 KiB and 1 MiB");
  if (c.low_watermark > c.high_watermark)
    return bad("low watermark " + std::to_string(c.low_watermark) + " is above high watermark " +
               std::to_string(c.high_watermark));
  if (c.high_watermark == 0) return bad("high watermark must be at least 1");
  if (c.pressure_low > c.pressure_high || c.pressure_high == 0)
    return bad("pressure points inverted: low " + std::to_string(c.pressure_low) + ", high " +
               std::to_string(c.pressure_high));
  if (c.max_iovecs == 0 || c.max_iovecs > 1024) return bad("max iovecs must be 1..1024");
  if (c.max_io_bytes < unit) return bad("max IO bytes is below the stripe unit");
  if (c.max_submitters == 0 || c.max_submitters > 65535) return bad("max submitters must be 1..65535");
  for (const DriveSpec& d : drives) {
    if (d.fd < 0) return bad("drive " + d.name + " has no open file");
    if (d.queue_depth == 0 || d.queue_depth > 65536) return bad("drive " + d.name + ": queue depth must be 1..65536");
  }
  return Status::ok();
}

}  // namespace

Engine::Engine(const EngineConfig& config, const StripeMap& map)
    : config_(config),
      low_watermark_(config.low_watermark),
      high_watermark_(config.high_watermark),
      map_(map),
      fence_(std::make_unique<LayoutFence>(map_)) {}

void Engine::set_watermarks(uint32_t low, uint32_t high) {
  // A full batch must fit a submitter's pool (create() sized it past the
  // config's high watermark).
  high = std::clamp<uint32_t>(high, 1, config_.subios_per_submitter - 1);
  high_watermark_.store(high, std::memory_order_relaxed);
  low_watermark_.store(std::min(low, high), std::memory_order_relaxed);
}

Expected<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config, const StripeMap& map,
                                                 std::vector<DriveSpec> drives) {
  UringDeviceFactory rings;
  return create(config, map, std::move(drives), rings);
}

Expected<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config_in, const StripeMap& map,
                                                 std::vector<DriveSpec> drives, DeviceFactory& devices) {
  EngineConfig config = config_in;
  uint32_t n = static_cast<uint32_t>(drives.size());
  if (config.low_watermark == 0) config.low_watermark = n;
  if (config.high_watermark == 0) config.high_watermark = 16 * n;
  if (config.subios_per_submitter == 0)
    config.subios_per_submitter = std::max<uint32_t>(4096, 4 * config.high_watermark);
  if (config.subios_per_submitter <= config.high_watermark) config.subios_per_submitter = config.high_watermark + 1;
  if (Status s = check_config(config, map, drives); !s) return s;

  std::unique_ptr<Engine> engine(new Engine(config, map));
  std::vector<int> nodes;
  for (const DriveSpec& d : drives) nodes.push_back(d.numa_node);
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> cpus = place_drive_threads(nodes, config.drive_cpus, allowed);
  if (!config.pin_drive_threads) cpus.assign(n, -1);

  for (uint32_t i = 0; i < n; ++i) {
    const DriveSpec& spec = drives[i];
    auto device = devices.open(i, spec);
    if (!device)
      return Status::error(device.status().errnum(), "member " + spec.name + ": " + device.status().message());
    engine->drives_[i] = std::make_unique<Drive>(i, engine->config_, std::move(*device), spec.queue_depth);
  }
  engine->drive_count_.store(n, std::memory_order_release);
  MutexLock lock(engine->threads_mutex_);
  engine->drive_nodes_ = nodes;
  engine->placement_cpus_ = allowed;
  const uint32_t allowed_count = static_cast<uint32_t>(allowed.size());
  for (const DriveThreadPlan& p : plan_drive_threads(cpus, config.drive_threads, allowed_count)) {
    std::vector<Drive*> served;
    for (uint32_t d : p.drives) served.push_back(engine->drives_[d].get());
    auto t = DriveThread::create(std::move(served), p.cpu, "pg-drive-" + std::to_string(p.drives.front()));
    if (!t) return Status::error(t.status().errnum(), "drive thread: " + t.status().message());
    // Owned by the engine before any drive points at its waker.
    engine->threads_.push_back(std::move(*t));
    if (Status s = engine->threads_.back()->attach_drives(); !s)
      return Status::error(s.errnum(), "drive thread: " + s.message());
  }
  for (auto& t : engine->threads_) t->start();
  return engine;
}

Engine::~Engine() {
  const uint32_t n = drive_count();
  for (uint32_t d = 0; d < n; ++d) drives_[d]->request_stop();
  MutexLock lock(threads_mutex_);
  for (auto& t : threads_) t->join();  // each finishes its drives' IO first
  // Devices (a fault injector's watcher) may still wake the waker until
  // they are gone: drives first, then the threads that own the wakers.
  for (uint32_t d = 0; d < n; ++d) drives_[d].reset();
  threads_.clear();
}

Expected<std::unique_ptr<Submitter>> Engine::open_submitter() {
  MutexLock lock(slots_mutex_);
  for (auto& slot : slots_) {
    bool expected = false;
    if (slot->in_use.compare_exchange_strong(expected, true)) {
      return std::unique_ptr<Submitter>(new Submitter(*this, *slot));
    }
  }
  if (slots_.size() >= config_.max_submitters) {
    return Status::error(EBUSY,
                         "engine: all " + std::to_string(config_.max_submitters) + " submitter slots are in use");
  }
  auto slot = std::make_unique<SubmitterSlot>();
  slot->index = static_cast<uint32_t>(slots_.size());
  slot->in_use.store(true);
  uint32_t pool = config_.subios_per_submitter;
  slot->pool.resize(pool);
  slot->free.reserve(pool);
  for (uint32_t i = pool; i > 0; --i) {
    slot->pool[i - 1].id = i - 1;
    slot->pool[i - 1].owner = slot.get();
    slot->free.push_back(i - 1);
  }
  // Under slots_mutex_, as add_drive(): every drive there is gets a queue.
  uint32_t n = drive_count();
  for (uint32_t d = 0; d < n; ++d) {
    slot->return_storage.push_back(std::make_unique<SubIoReturnQueue>(pool));
    slot->returns[d].store(slot->return_storage.back().get(), std::memory_order_release);
  }
  slot->return_count.store(n, std::memory_order_release);
  slot->plug.resize(kEngineMaxDrives);
  slot->direct_counts = std::make_unique<DirectCounts[]>(kEngineMaxDrives);
  for (uint32_t d = 0; d < n; ++d) slot->plug[d].reserve(high_watermark());
  slot->inline_candidates.reserve(kEngineMaxDrives);
  slot->served_inline.reserve(kEngineMaxDrives);
  slots_.push_back(std::move(slot));
  return std::unique_ptr<Submitter>(new Submitter(*this, *slots_.back()));
}

DriveStats Engine::stats(uint32_t drive) const {
  if (drive >= drive_count()) return DriveStats{};
  DriveStats s = drives_[drive]->stats();
  // The pieces submitters moved themselves (Submitter::add's direct path).
  MutexLock lock(slots_mutex_);
  for (const auto& slot : slots_) slot->direct_counts[drive].add_to(s);
  return s;
}

uint64_t Engine::outstanding() const {
  uint64_t total = 0;
  for (uint32_t d = 0, n = drive_count(); d < n; ++d) total += drives_[d]->outstanding();
  return total;
}

void Engine::dispatch_held() {
  for (uint32_t d = 0, n = drive_count(); d < n; ++d) drives_[d]->dispatch_held();
}

size_t Engine::reap_here() {
  size_t done = 0;
  for (uint32_t d = 0, n = drive_count(); d < n; ++d) done += drives_[d]->reap_here();
  return done;
}

int Engine::transfer_lone_piece(IoOp op, uint64_t offset, std::byte* buf, uint64_t len) {
  constexpr uint64_t kAlign = 4096;  // Submitter::add's rule
  if (offset % kAlign != 0 || len % kAlign != 0 || reinterpret_cast<uintptr_t>(buf) % kAlign != 0 ||
      offset > map_.volume_size() || len > map_.volume_size() - offset)
    return -EINVAL;
  if (op == IoOp::flush || len == 0 || map_.piece_count(offset, len) != 1) return -EOPNOTSUPP;
  // Counted before the fence is looked at: begin_restripe waits for every
  // call that saw it inactive. While a restripe runs, the IO goes through
  // Submitter::add and the fence.
  lone_transfers_.fetch_add(1);
  if (fence_->active()) {
    lone_transfers_.fetch_sub(1);
    return -EOPNOTSUPP;
  }
  const StripePiece piece = map_.piece_at(offset, len);
  const int rc = drives_[piece.member]->transfer_blocking(op, piece.member_offset, buf, len);
  lone_transfers_.fetch_sub(1);
  return rc;
}

int Engine::flush_lone_drive() {
  Drive* lone = nullptr;
  for (uint32_t d = 0, n = drive_count(); d < n; ++d) {
    if (!drives_[d]->needs_flush()) continue;
    if (lone != nullptr) return -EOPNOTSUPP;
    lone = drives_[d].get();
  }
  return lone == nullptr ? 0 : lone->flush_blocking();
}

Status Engine::install_mirror(uint32_t drive, std::unique_ptr<DeviceQueue> secondary,
                              std::shared_ptr<MirrorFence> fence) {
  if (drive >= drive_count()) return Status::error(EINVAL, "no drive " + std::to_string(drive));
  return drives_[drive]->install_mirror(std::move(secondary), std::move(fence));
}

}  // namespace peregrine
