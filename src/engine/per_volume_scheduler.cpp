#include "per_volume_scheduler.h"

#include "subio_pool.h"

namespace peregrine {

PerVolumeScheduler::PerVolumeScheduler(const EngineConfig& config, const StripeMap& map,
                                       std::span<const std::unique_ptr<Drive>> drives, SubmitterSlot& slot)
    : config_(config), map_(map), drives_(drives), slot_(slot), plug_tags_(drives.size()) {
  for (auto& tags : plug_tags_) tags.reserve(config.high_watermark);
}

void PerVolumeScheduler::add(Request& r, const std::vector<uint32_t>& flush_targets) {
  if (r.op == IoOp::flush) {
    for (uint32_t d : flush_targets) stage(r, d, 0, nullptr, 0);
    return;
  }
  map_.split(r.offset, r.length, [&](const StripePiece& p) {
    stage(r, p.member, p.member_offset, r.buffer + (p.volume_offset - r.offset), static_cast<uint32_t>(p.length));
  });
}

void PerVolumeScheduler::stage(Request& r, uint32_t member, uint64_t member_offset, std::byte* buf, uint32_t len) {
  Drive& drive = *drives_[member];
  std::vector<uint32_t>& tags = plug_tags_[member];
  SubIo* s = take_subio(
      slot_, [this] { unplug(); }, config_.before_submitter_blocks);
  init_subio(s, r, member_offset, buf, len);
  s->next = nullptr;
  // Like the kernel's plug merge: try to extend the last IO of this drive.
  if (!tags.empty() && r.op != IoOp::flush) {
    SubIo* head = drive.tag_chain(tags.back());
    if (head->op == s->op && head->via_page_cache == s->via_page_cache &&
        head->member_offset + head->chain_bytes == member_offset &&
        head->chain_bytes + len <= config_.max_io_bytes && head->chain_count + 1 <= config_.max_iovecs) {
      head->chain_tail->next = s;
      head->chain_tail = s;
      head->chain_bytes += len;
      ++head->chain_count;
      if (++slot_.batch >= config_.high_watermark) unplug();
      return;
    }
  }
  uint32_t tag;
  while (!drive.try_acquire_tag(&tag)) {
    // Out of tags on this drive: the whole thread stops here, as the
    // per-volume path does. Dispatch what we hold first (as the kernel
    // flushes the plug before sleeping), or we would wait on ourselves.
    unplug();
    if (config_.before_submitter_blocks) config_.before_submitter_blocks();
    drive.wait_for_tag();
  }
  s->chain_tail = s;
  s->chain_bytes = len;
  s->chain_count = 1;
  drive.bind_tag(tag, s);
  tags.push_back(tag);
  if (++slot_.batch >= config_.high_watermark) unplug();
}

void PerVolumeScheduler::unplug() {
  slot_.batch = 0;
  uint32_t n = static_cast<uint32_t>(drives_.size());
  uint32_t first = round_robin_++ % n;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t d = (first + i) % n;
    std::vector<uint32_t>& tags = plug_tags_[d];
    if (tags.empty()) continue;
    drives_[d]->dispatch_tags(tags.data(), tags.size());
    tags.clear();
  }
}

}  // namespace peregrine
