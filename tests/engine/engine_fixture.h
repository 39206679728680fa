// Test support for engine tests: member files in a temporary directory, an
// engine over them (each drive wearing the layers the test put in
// layers_: a shape, faults, a wrapper), blocking helpers, and GatedDevice, which holds every
// completion until the test opens the gate (so tag, backlog and pressure
// tests control exactly what is in flight, without timing).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "peregrine/backend/completion_waker.h"
#include "peregrine/backend/member_file.h"
#include "peregrine/engine/engine.h"
#include "peregrine/engine/layered_device_factory.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/clock.h"

namespace peregrine::testing {

// Holds completions from the inner device while the gate is shut.
// Counters are atomics so the test thread can watch them. A gate wakes
// one drive thread (the last to attach): give each drive its own.
class GatedDevice final : public DeviceQueue {
 public:
  struct Gate {
    std::atomic<bool> open{true};
    std::atomic<uint64_t> started{0};
    std::atomic<CompletionWaker*> waker{nullptr};  // the drive thread's, once attached
    void set_open(bool v) {
      open.store(v);
      if (CompletionWaker* w = waker.load()) w->wake();
    }
  };
  GatedDevice(std::unique_ptr<DeviceQueue> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  ~GatedDevice() override { gate_->waker.store(nullptr); }  // the gate may outlive the engine
  Status attach_waker(CompletionWaker& waker) override {
    gate_->waker.store(&waker);
    return inner_->attach_waker(waker);
  }
  void start(const DeviceIo& io) override {
    gate_->started.fetch_add(1);
    inner_->start(io);
  }
  void submit() override { inner_->submit(); }
  size_t reap(std::span<DeviceCompletion> out) override {
    DeviceCompletion buf[256];
    return release(inner_->reap(std::span<DeviceCompletion>(buf, 256)), buf, out);
  }
  size_t reap_finished_inline(std::span<DeviceCompletion> out) override {
    DeviceCompletion buf[256];
    return release(inner_->reap_finished_inline(std::span<DeviceCompletion>(buf, 256)), buf, out);
  }
  size_t release(size_t n, const DeviceCompletion* buf, std::span<DeviceCompletion> out) {
    held_.insert(held_.end(), buf, buf + n);
    if (!gate_->open.load()) return 0;
    size_t k = std::min(out.size(), held_.size());
    std::copy(held_.begin(), held_.begin() + static_cast<long>(k), out.begin());
    held_.erase(held_.begin(), held_.begin() + static_cast<long>(k));
    return k;
  }
  bool prepare_sleep(uint64_t& deadline_ns) override {
    return !(gate_->open.load() && !held_.empty()) && inner_->prepare_sleep(deadline_ns);
  }
  bool has_ready() const override { return (gate_->open.load() && !held_.empty()) || inner_->has_ready(); }

 private:
  std::unique_ptr<DeviceQueue> inner_;
  std::shared_ptr<Gate> gate_;
  std::vector<DeviceCompletion> held_;
};

// Waits for one request's callback without sleeping blindly.
struct Waiter {
  std::atomic<int> done{0};
  std::atomic<int> result{1};
  static void on_complete(Request& r, int result) {
    auto* w = static_cast<Waiter*>(r.context);
    w->result.store(result);
    w->done.store(1);
    w->done.notify_all();
  }
  void wait() { done.wait(0); }
  void arm(Request& r) {
    done.store(0);
    result.store(1);
    r.on_complete = &Waiter::on_complete;
    r.context = this;
  }
};

// This process's threads: (thread id, name) of each, from /proc/self/task.
inline std::vector<std::pair<pid_t, std::string>> process_threads() {
  std::vector<std::pair<pid_t, std::string>> threads;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    threads.emplace_back(static_cast<pid_t>(std::stol(e.path().filename().string())), name);
  }
  return threads;
}

// A request for all of `buf` at volume offset `offset`.
// (A prvalue: Request holds atomics, so it is neither copied nor moved.)
inline Request request_for(IoOp op, uint64_t offset, AlignedBuffer& buf) {
  return Request{.op = op, .offset = offset, .length = buf.size(), .buffer = buf.data()};
}

class EngineFixture : public ::testing::Test {
 protected:
  void TearDown() override {
    engine_.reset();
    members_.clear();
    for (const std::string& d : dirs_) std::filesystem::remove_all(d);
  }

  // Creates `n` member files of `member_bytes` data each (plus data_start).
  void make_members(uint32_t n, uint64_t member_bytes, uint64_t data_start = 0) {
    char tmpl[] = "/tmp/peregrine-engine-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // A test that makes members again (a second engine) keeps the first
    // set until TearDown, which removes every set it made.
    dirs_.push_back(dir_);
    for (uint32_t i = 0; i < n; ++i) {
      std::string path = dir_ + "/m" + std::to_string(i);
      int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0600);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(member_bytes + data_start)), 0);
      ::close(fd);
      auto m = MemberFile::open(path, MemberFile::Mode::read_write);
      ASSERT_TRUE(m) << m.status().message();
      members_.push_back(std::move(*m));
    }
    member_bytes_ = member_bytes;
    data_start_ = data_start;
    layers_.assign(n, DeviceLayers{});
  }

  std::vector<DriveSpec> specs(uint32_t queue_depth = 32) {
    std::vector<DriveSpec> v;
    for (auto& m : members_) {
      DriveSpec d;
      d.name = m.info().path;
      d.fd = m.fd();
      d.queue_depth = queue_depth;
      v.push_back(std::move(d));
    }
    return v;
  }

  void start(const EngineConfig& config, uint32_t stripe_unit, std::vector<DriveSpec> drives) {
    StripeMap map(static_cast<uint32_t>(members_.size()), stripe_unit, data_start_, member_bytes_);
    LayeredDeviceFactory devices(layers_);
    auto e = Engine::create(config, map, std::move(drives), devices);
    ASSERT_TRUE(e) << e.status().message();
    engine_ = std::move(*e);
  }

  // Synchronous IO through a fresh submitter.
  int io(IoOp op, uint64_t offset, AlignedBuffer& buf) {
    auto sub = engine_->open_submitter();
    EXPECT_TRUE(sub);
    Request r = request_for(op, offset, buf);
    Waiter w;
    w.arm(r);
    int rc = (*sub)->submit(r);
    if (rc != 0) return rc;
    w.wait();
    return w.result.load();
  }

  // Adds every request to `sub` (one batch, one unplug) and waits for all
  // of them; returns the first failure (add's or the IO's), or 0.
  static int run_batch(Submitter& sub, std::vector<Request>& reqs) {
    std::vector<Waiter> waiters(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      waiters[i].arm(reqs[i]);
      if (int rc = sub.add(reqs[i]); rc != 0) {
        sub.unplug();
        for (size_t k = 0; k < i; ++k) waiters[k].wait();
        return rc;
      }
    }
    sub.unplug();
    int first = 0;
    for (auto& w : waiters) {
      w.wait();
      if (first == 0) first = w.result.load();
    }
    return first;
  }

  // Waits until drive d's published snapshot satisfies `pred`. Snapshots
  // are published when the drive thread goes idle, so this ends promptly;
  // the 30 s guard only turns a bug into a failure instead of a hang.
  template <typename Pred>
  DriveStats wait_stats(uint32_t d, Pred&& pred) {
    uint64_t deadline = monotonic_ns() + 30000000000ull;
    DriveStats s = engine_->stats(d);
    while (!pred(s)) {
      if (monotonic_ns() > deadline) {
        ADD_FAILURE() << "drive " << d << " never reached the expected state";
        break;
      }
      std::this_thread::yield();
      s = engine_->stats(d);
    }
    return s;
  }

  static void fill(AlignedBuffer& b, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < b.size(); ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b.data()[i] = std::byte(x & 0xff);
    }
  }

  std::string dir_;                // the latest set's directory
  std::vector<std::string> dirs_;  // every set's, for TearDown
  std::vector<MemberFile> members_;
  uint64_t member_bytes_ = 0;
  uint64_t data_start_ = 0;
  std::vector<DeviceLayers> layers_;  // what each drive wears; set before start()
  std::unique_ptr<Engine> engine_;
};

}  // namespace peregrine::testing
