#include "peregrine/backend/faulty_device.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "peregrine/backend/completion_waker.h"

namespace peregrine {
namespace {

constexpr uint64_t kShortUnit = 4096;  // O_DIRECT forbids shorter pieces

bool armed(const FaultRule& r) {
  if (r.armed_while.empty()) return true;
  struct stat st;
  return ::stat(r.armed_while.c_str(), &st) == 0;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<DeviceQueue> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(std::move(plan)), hits_(plan_.rules.size(), 0) {
  bool holds = std::any_of(plan_.rules.begin(), plan_.rules.end(),
                           [](const FaultRule& r) { return r.action == FaultRule::Action::hold; });
  if (!holds) return;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  watcher_ = std::thread([this] { watch(); });
}

FaultInjectingDevice::~FaultInjectingDevice() {
  if (watcher_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
    watcher_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void FaultInjectingDevice::watch() {
  // Any removal or rename in a directory that holds an arming file may
  // release held IO: wake the drive thread, which checks the files itself
  // (so a removal that raced with a new hold is never missed).
  int in = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in < 0) return;
  std::set<std::string> dirs;
  for (const FaultRule& r : plan_.rules) {
    if (r.action == FaultRule::Action::hold) dirs.insert(dir_of(r.armed_while));
  }
  for (const std::string& d : dirs) ::inotify_add_watch(in, d.c_str(), IN_DELETE | IN_MOVED_FROM | IN_ATTRIB);
  alignas(inotify_event) char buf[4096];
  for (;;) {
    pollfd p[2] = {{in, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) break;
    while (::read(in, buf, sizeof buf) > 0) {
    }
    if (CompletionWaker* w = waker_.load()) w->wake();
  }
  ::close(in);
}

FaultRule* FaultInjectingDevice::match(const DeviceIo& io, uint64_t bytes) {
  for (size_t i = 0; i < plan_.rules.size(); ++i) {
    FaultRule& r = plan_.rules[i];
    if (r.times != 0 && hits_[i] >= r.times) continue;
    if (r.op && *r.op != io.op) continue;
    if (r.nth != 0 && r.nth != started_) continue;
    if (r.range_end != 0 && !(io.offset < r.range_end && io.offset + bytes > r.range_begin)) continue;
    if (!armed(r)) continue;
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
  if (rule->action == FaultRule::Action::hold) {
    held_.push_back(Held{io, rule});
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

bool FaultInjectingDevice::release_held() {
  if (held_.empty()) return false;
  bool any = false;
  size_t kept = 0;
  for (Held& h : held_) {
    if (armed(*h.rule)) {
      held_[kept++] = h;
      continue;
    }
    inner_->start(h.io);
    any = true;
  }
  held_.resize(kept);
  if (any) inner_->submit();
  return any;
}

Status FaultInjectingDevice::attach_waker(CompletionWaker& waker) {
  waker_.store(&waker);
  return inner_->attach_waker(waker);
}

bool FaultInjectingDevice::prepare_sleep(uint64_t& deadline_ns) {
  if (!failed_.empty()) return false;
  // Held IO released: start it now rather than sleep on it.
  if (release_held()) return false;
  return inner_->prepare_sleep(deadline_ns);
}

size_t FaultInjectingDevice::take_failed(std::span<DeviceCompletion> out) {
  release_held();
  size_t n = 0;
  while (n < out.size() && !failed_.empty()) {
    out[n++] = failed_.back();
    failed_.pop_back();
  }
  return n;
}

size_t FaultInjectingDevice::reap(std::span<DeviceCompletion> out) {
  size_t n = take_failed(out);
  return n + inner_->reap(out.subspan(n));
}

size_t FaultInjectingDevice::reap_finished_inline(std::span<DeviceCompletion> out) {
  size_t n = take_failed(out);
  return n + inner_->reap_finished_inline(out.subspan(n));
}

}  // namespace peregrine
