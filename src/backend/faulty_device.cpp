#include "peregrine/backend/faulty_device.h"

#include <algorithm>

namespace peregrine {
namespace {

constexpr uint64_t kShortUnit = 4096;  // O_DIRECT forbids shorter pieces

}  // namespace

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<DeviceQueue> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(std::move(plan)), hits_(plan_.rules.size(), 0) {}

FaultRule* FaultInjectingDevice::match(const DeviceIo& io, uint64_t bytes) {
  for (size_t i = 0; i < plan_.rules.size(); ++i) {
    FaultRule& r = plan_.rules[i];
    if (r.times != 0 && hits_[i] >= r.times) continue;
    if (r.op && *r.op != io.op) continue;
    if (r.nth != 0 && r.nth != started_) continue;
    if (r.range_end != 0 && !(io.offset < r.range_end && io.offset + bytes > r.range_begin)) continue;
    ++hits_[i];
    return &r;
  }
  return nullptr;
}

void FaultInjectingDevice::start(const DeviceIo& io) {
  ++started_;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < io.iovcnt; ++i) bytes += io.iov[i].iov_len;
  FaultRule* rule = match(io, bytes);
  if (rule == nullptr) {
    inner_->start(io);
    return;
  }
  if (rule->action == FaultRule::Action::fail) {
    failed_.push_back(DeviceCompletion{io.tag, -rule->errnum});
    return;
  }
  // Short transfer: the device moves only the first half (whole blocks).
  uint64_t keep = bytes / 2 / kShortUnit * kShortUnit;
  if (keep == 0 || io.op == IoOp::flush) {
    inner_->start(io);
    return;
  }
  if (short_iov_.size() <= io.tag) short_iov_.resize(io.tag + 1);
  std::vector<iovec>& v = short_iov_[io.tag];
  v.clear();
  uint32_t cnt = 0;
  DeviceIo shortened = io;
  uint64_t left = keep;
  for (uint32_t i = 0; i < io.iovcnt && left > 0; ++i, ++cnt) {
    iovec piece = io.iov[i];
    piece.iov_len = std::min<uint64_t>(piece.iov_len, left);
    left -= piece.iov_len;
    v.push_back(piece);
  }
  shortened.iov = v.data();
  shortened.iovcnt = cnt;
  inner_->start(shortened);
}

size_t FaultInjectingDevice::reap(std::span<DeviceCompletion> out) {
  size_t n = 0;
  while (n < out.size() && !failed_.empty()) {
    out[n++] = failed_.back();
    failed_.pop_back();
  }
  return n + inner_->reap(out.subspan(n));
}

}  // namespace peregrine
