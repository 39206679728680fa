// RequestReader (fuse.batch_requests): staged IO stays staged across data
// requests only, is handed on before the worker could sleep or return
// anything else, and the descriptor blocks only while nothing is staged. A
// SOCK_SEQPACKET pair stands in for /dev/fuse: one read, one request.
// Whether a request was queued when the worker asked is told where it is
// certain: found by the first look, by a helper, or slept for.
// With a ReadTurn on a busy volume, one worker at a time sleeps in read()
// and keeps the turn across requests that do not wait, and the others read
// only when called; on a quiet volume every worker reads, unless one
// program alone makes metadata requests (LoneCaller): then one worker
// reads, and a request found waiting calls no helper.
#include "peregrine/fs/request_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fuse.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "peregrine/util/clock.h"

namespace peregrine::fs {
namespace {

class FakeStaging final : public StagedIo {
 public:
  explicit FakeStaging(bool staged) : staged_(staged) {}
  bool staged() override { return staged_.load(); }
  bool io_in_flight() override { return in_flight.load(); }
  std::atomic<bool> in_flight{false};
  void unplug() override {
    if (staged_.exchange(false)) {
      ++handed_on;
      handed_on_promise.set_value();
    }
  }
  int handed_on = 0;
  std::promise<void> handed_on_promise;

 private:
  std::atomic<bool> staged_;
};

class RequestReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds_), 0) << std::strerror(errno); }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int worker_fd() const { return fds_[0]; }
  // Sends a request with this opcode and a 16-byte body that tags it, as
  // if from caller thread `pid`.
  void send(uint32_t opcode, uint64_t unique, uint32_t pid = 0) {
    std::vector<char> msg(sizeof(fuse_in_header) + 16, 'x');
    fuse_in_header h{};
    h.len = static_cast<uint32_t>(msg.size());
    h.opcode = opcode;
    h.unique = unique;
    h.pid = pid;
    std::memcpy(msg.data(), &h, sizeof h);
    ASSERT_EQ(write(fds_[1], msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  }
  uint64_t unique_of(const char* buf) const {
    fuse_in_header h;
    std::memcpy(&h, buf, sizeof h);
    return h.unique;
  }
  bool nonblocking() const { return (fcntl(worker_fd(), F_GETFL) & O_NONBLOCK) != 0; }
  void close_kernel_side() {
    close(fds_[1]);
    fds_[1] = -1;
  }

  RequestReader reader_;
  int fds_[2] = {-1, -1};
  char buf_[4096];
};

TEST_F(RequestReaderTest, ReadOrWriteReturnsWithTheBatchStillStaged) {
  FakeStaging staging(true);
  for (uint32_t op : {FUSE_READ, FUSE_WRITE}) {
    send(op, 7 + op);
    bool is_data = false;
    ASSERT_EQ(reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data),
              static_cast<ssize_t>(sizeof(fuse_in_header) + 16));
    EXPECT_TRUE(is_data);
    EXPECT_EQ(unique_of(buf_), 7u + op);
    EXPECT_TRUE(staging.staged()) << "opcode " << op;
    EXPECT_TRUE(nonblocking()) << "a worker with staged IO must never sleep in read()";
    EXPECT_TRUE(reader_.request_was_queued()) << "it was sent before the worker asked";
  }
}

TEST_F(RequestReaderTest, OtherRequestsComeBackOnlyAfterTheBatchIsHandedOn) {
  for (uint32_t op : {FUSE_FSYNC, FUSE_SETATTR, FUSE_FALLOCATE, FUSE_FLUSH, FUSE_LOOKUP}) {
    FakeStaging staging(true);
    send(op, op);
    bool is_data = true;
    ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data), 0);
    EXPECT_FALSE(is_data);
    EXPECT_EQ(unique_of(buf_), op);
    EXPECT_EQ(staging.handed_on, 1) << "opcode " << op;
  }
}

TEST_F(RequestReaderTest, NoRequestWaitingHandsTheBatchOnBeforeSleeping) {
  FakeStaging staging(true);
  std::future<void> handed_on = staging.handed_on_promise.get_future();
  bool is_data = false;
  ssize_t n = -2;
  int err = 0;
  std::thread worker([&] {
    n = reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data);
    err = errno;
  });
  // Nothing has been sent: the worker must hand its batch on and wait. (The
  // bound only turns a hang into a failure.)
  bool handed_on_first = handed_on.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  send(FUSE_READ, 42);
  worker.join();
  ASSERT_TRUE(handed_on_first) << "the worker went to sleep with its IO staged";
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof(fuse_in_header) + 16)) << std::strerror(err);
  EXPECT_TRUE(is_data);
  EXPECT_EQ(unique_of(buf_), 42u);
  EXPECT_EQ(staging.handed_on, 1);
  // It slept in poll() on the descriptor as the batch left it: a busy
  // worker pays no fcntl() pair per batch.
  EXPECT_TRUE(nonblocking());
}

// Two workers sharing a wait (cloned descriptors share the kernel's queue):
// both wake for one request, one gets it, and the other's read finds
// nothing. That worker must wait again, never hand EAGAIN to libfuse
// (which would end the session).
TEST_F(RequestReaderTest, WorkerThatLosesTheRaceForARequestWaitsForTheNext) {
  struct Worker {
    RequestReader reader;
    FakeStaging staging{true};
    char buf[4096];
    ssize_t n = -2;
    int err = 0;
    uint64_t unique = 0;
  };
  Worker a, b;
  std::future<void> a_waits = a.staging.handed_on_promise.get_future();
  std::future<void> b_waits = b.staging.handed_on_promise.get_future();
  std::atomic<int> returned{0};
  auto serve = [this, &returned](Worker& w) {
    bool is_data = false;
    w.n = w.reader.read(worker_fd(), w.buf, sizeof w.buf, w.staging, &is_data);
    w.err = errno;
    if (w.n > 0) w.unique = unique_of(w.buf);
    returned.fetch_add(1);
    returned.notify_all();
  };
  std::thread ta(serve, std::ref(a));
  std::thread tb(serve, std::ref(b));
  // Both found nothing and handed their batches on: both wait for a request.
  bool both_wait = a_waits.wait_for(std::chrono::seconds(30)) == std::future_status::ready &&
                   b_waits.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  send(FUSE_WRITE, 1);  // wakes both; one gets it
  for (int n = returned.load(); n == 0; n = returned.load()) returned.wait(n);
  send(FUSE_WRITE, 2);  // for the one that must still be waiting
  ta.join();
  tb.join();
  ASSERT_TRUE(both_wait);
  ASSERT_GT(a.n, 0) << std::strerror(a.err);
  ASSERT_GT(b.n, 0) << std::strerror(b.err);
  EXPECT_EQ(a.unique + b.unique, 3u) << "each request exactly once";
  EXPECT_NE(a.unique, b.unique);
}

TEST_F(RequestReaderTest, NothingStagedReadsBlockingAndHandsNothingOn) {
  FakeStaging staged(true);
  send(FUSE_READ, 1);
  bool is_data = false;
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, staged, &is_data), 0);
  ASSERT_TRUE(nonblocking());

  // The volume went quiet: the next request finds nothing staged, and the
  // descriptor goes back to blocking reads (one system call per request).
  FakeStaging idle(false);
  std::thread kernel([&] { send(FUSE_WRITE, 2); });
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data), 0);
  kernel.join();
  EXPECT_TRUE(is_data);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_FALSE(nonblocking());
  EXPECT_EQ(idle.handed_on, 0);
}

// A ReadSpin whose window has grown to its start (one miss that slept
// briefly).
void open_window(ReadSpin& spin) {
  spin.set_limit_ns(1'000'000'000);
  ASSERT_TRUE(spin.try_begin());
  spin.missed();
  spin.adapt(1);
  ASSERT_EQ(spin.window_ns(), ReadSpin::kGrowStartNs);
}

TEST_F(RequestReaderTest, SpinningWorkerTakesAWaitingRequestWithoutSleeping) {
  ReadSpin spin;
  open_window(spin);
  FakeStaging idle(false);
  send(FUSE_WRITE, 7);
  bool is_data = false;
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data, nullptr, &spin), 0);
  EXPECT_TRUE(is_data);
  EXPECT_EQ(unique_of(buf_), 7u);
  EXPECT_EQ(spin.requests_found(), 1u);
  EXPECT_EQ(spin.sleeps(), 1u) << "only open_window's";
  EXPECT_TRUE(nonblocking()) << "a spinning worker keeps the descriptor non-blocking";
  EXPECT_TRUE(reader_.request_was_queued()) << "its first look found it";
  EXPECT_EQ(idle.handed_on, 0);
}

TEST_F(RequestReaderTest, SpinThatFindsNoRequestSleepsUntilOneComes) {
  ReadSpin spin;
  open_window(spin);
  FakeStaging idle(false);
  bool is_data = false;
  ssize_t n = -1;
  std::thread worker([&] { n = reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data, nullptr, &spin); });
  // The request comes only once the worker has given up spinning.
  while (spin.sleeps() < 2) std::this_thread::yield();
  send(FUSE_LOOKUP, 9);
  worker.join();
  ASSERT_GT(n, 0);
  EXPECT_FALSE(is_data);
  EXPECT_EQ(unique_of(buf_), 9u);
  EXPECT_EQ(spin.requests_found(), 0u);
  EXPECT_FALSE(reader_.request_was_queued()) << "the worker slept for it";
  EXPECT_TRUE(spin.try_begin()) << "the sleeping worker let go of the spinner's place";
}

TEST_F(RequestReaderTest, WhetherARequestWasQueuedIsToldAfreshForEachRead) {
  ReadSpin spin;
  open_window(spin);
  FakeStaging idle(false);
  send(FUSE_LOOKUP, 1);
  bool is_data = false;
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data, nullptr, &spin), 0);
  ASSERT_TRUE(reader_.request_was_queued());
  const uint64_t sleeps = spin.sleeps();
  ssize_t n = -1;
  std::thread worker([&] { n = reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data, nullptr, &spin); });
  while (spin.sleeps() == sleeps) std::this_thread::yield();  // its spin missed
  send(FUSE_LOOKUP, 2);
  worker.join();
  ASSERT_GT(n, 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_FALSE(reader_.request_was_queued()) << "the answer for the request before was kept";
}

TEST_F(RequestReaderTest, SecondWorkerSleepsWhileOneSpins) {
  ReadSpin spin;
  open_window(spin);
  ASSERT_TRUE(spin.try_begin());  // another worker spins
  FakeStaging idle(false);
  std::thread kernel([&] { send(FUSE_READ, 3); });
  bool is_data = false;
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle, &is_data, nullptr, &spin), 0);
  kernel.join();
  EXPECT_EQ(unique_of(buf_), 3u);
  EXPECT_EQ(spin.requests_found(), 0u);
  EXPECT_EQ(spin.sleeps(), 1u) << "only open_window's: this worker did not spin";
  EXPECT_FALSE(nonblocking()) << "a worker that does not spin reads blocking";
}

TEST_F(RequestReaderTest, EndOfChannelHandsTheBatchOn) {
  FakeStaging staging(true);
  close_kernel_side();
  bool is_data = true;
  EXPECT_EQ(reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data), 0);
  EXPECT_FALSE(is_data);
  EXPECT_EQ(staging.handed_on, 1);
}

TEST_F(RequestReaderTest, BadDescriptorHandsTheBatchOnAndReportsTheError) {
  FakeStaging staging(true);
  bool is_data = true;
  errno = 0;
  ssize_t n = reader_.read(-1, buf_, sizeof buf_, staging, &is_data);
  EXPECT_EQ(n, -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_FALSE(is_data);
  EXPECT_EQ(staging.handed_on, 1);
}

TEST_F(RequestReaderTest, ShortMessageIsNotADataRequest) {
  FakeStaging staging(true);
  const char tiny[4] = {1, 2, 3, 4};
  ASSERT_EQ(write(fds_[1], tiny, sizeof tiny), 4);
  bool is_data = true;
  EXPECT_EQ(reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data), 4);
  EXPECT_FALSE(is_data);
  EXPECT_EQ(staging.handed_on, 1);
}

// A worker of the turn tests: reads on its own thread, once.
struct TurnWorker {
  RequestReader reader;
  FakeStaging staging{false};
  char buf[4096];
  std::atomic<ssize_t> n{-2};
  uint64_t unique = 0;
  std::thread thread;

  void start(int fd, ReadTurn& turn, ReadSpin* spin = nullptr, LoneCaller* lone = nullptr) {
    thread = std::thread([this, fd, &turn, spin, lone] {
      bool is_data = false;
      ssize_t got = reader.read(fd, buf, sizeof buf, staging, &is_data, &turn, spin, lone);
      if (got >= static_cast<ssize_t>(sizeof(fuse_in_header))) {
        fuse_in_header h;
        std::memcpy(&h, buf, sizeof h);
        unique = h.unique;
      }
      n.store(got);
    });
  }
};

void wait_until_waiting(const ReadTurn& turn) {
  while (turn.waiting() == 0) std::this_thread::yield();
}

// The test's thread is worker A; b_ is a second worker. The volume is busy
// (IO was staged across requests) unless a test says otherwise.
class ReadTurnTest : public RequestReaderTest {
 protected:
  void SetUp() override {
    RequestReaderTest::SetUp();
    turn_.note_busy();
  }
  ssize_t read_as_a(StagedIo& staging) {
    return reader_.read(worker_fd(), buf_, sizeof buf_, staging, &is_data_, &turn_);
  }
  // A takes the turn with a first request; b_ then finds nothing to read
  // and waits for the turn.
  void a_holds_while_b_waits(StagedIo& staging) {
    send(FUSE_WRITE, 1);
    ASSERT_GT(read_as_a(staging), 0);
    ASSERT_TRUE(turn_.held_here());
    b_.start(worker_fd(), turn_);
    wait_until_waiting(turn_);
  }
  // The request b_ returned with.
  uint64_t b_took() {
    b_.thread.join();
    EXPECT_GT(b_.n.load(), 0);
    return b_.unique;
  }

  ReadTurn turn_;
  TurnWorker b_;
  bool is_data_ = false;
  FakeStaging idle_{false};
  FakeStaging busy_{true};
};

TEST_F(ReadTurnTest, TurnIsKeptAcrossRequestsThatDoNotWaitAndLeftBeforeOnesThatMay) {
  ASSERT_TRUE(turn_.usable());
  for (uint32_t op : {FUSE_WRITE, FUSE_READ, FUSE_LOOKUP, FUSE_GETATTR, FUSE_FLUSH}) {
    send(op, op);
    ASSERT_GT(read_as_a(idle_), 0);
    EXPECT_EQ(unique_of(buf_), op);
    EXPECT_TRUE(turn_.held_here()) << "opcode " << op;
  }
  for (uint32_t op : {FUSE_FSYNC, FUSE_FSYNCDIR, FUSE_SETLKW}) {
    send(op, op);
    ASSERT_GT(read_as_a(idle_), 0);
    EXPECT_FALSE(turn_.held_here()) << "opcode " << op;
    ASSERT_TRUE(turn_.try_take());
  }
}

// A works on an fsync (it does not read again): b_, which waited for the
// turn, must read the next request.
TEST_F(ReadTurnTest, AWorkerThatMayWaitHandsTheTurnToAWaitingWorker) {
  a_holds_while_b_waits(idle_);
  send(FUSE_FSYNC, 2);
  ASSERT_GT(read_as_a(idle_), 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_FALSE(turn_.held_here());
  send(FUSE_READ, 3);
  EXPECT_EQ(b_took(), 3u);
}

// An IO gate or synchronous IO lets go of the caller's turn the same way.
TEST_F(ReadTurnTest, LeavingAHeldTurnBeforeAWaitLetsAnotherWorkerRead) {
  a_holds_while_b_waits(idle_);
  ReadTurn::leave_held_turn();
  EXPECT_FALSE(turn_.held_here());
  send(FUSE_WRITE, 4);
  EXPECT_EQ(b_took(), 4u);
}

// On a busy volume (IO staged), a holder that sees another request queued
// behind the one it took calls a waiting worker to take it.
TEST_F(ReadTurnTest, BusyHolderCallsAWaitingWorkerForAQueuedRequest) {
  a_holds_while_b_waits(busy_);
  send(FUSE_WRITE, 2);
  send(FUSE_WRITE, 3);
  ASSERT_GT(read_as_a(busy_), 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_TRUE(turn_.held_here());
  EXPECT_EQ(b_took(), 3u) << "called to help, b_ takes request 3 while A works";
  EXPECT_EQ(turn_.helps_called(), 1u);
  EXPECT_TRUE(b_.reader.request_was_queued()) << "a helper takes only a request that waits";
}

// A lone request calls nobody: there is nothing queued behind it for a
// helper to take, so the waiting worker stays asleep.
TEST_F(ReadTurnTest, HolderCallsNoHelpForALoneRequest) {
  a_holds_while_b_waits(busy_);
  send(FUSE_WRITE, 2);
  ASSERT_GT(read_as_a(busy_), 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_EQ(turn_.helps_called(), 0u);
  EXPECT_EQ(b_.n.load(), -2) << "the waiting worker read a request";
  ReadTurn::leave_held_turn();  // let it go: it takes the turn and the next request
  send(FUSE_READ, 5);
  EXPECT_EQ(b_took(), 5u);
}

// A worker that finds IO staged, or IO on the drives (which the drive
// threads will answer), makes a quiet volume busy and takes the turn.
TEST_F(ReadTurnTest, StagedIoOrIoOnTheDrivesMakesAQuietVolumeBusy) {
  FakeStaging on_drives{false};
  on_drives.in_flight.store(true);
  for (StagedIo* staging : {static_cast<StagedIo*>(&busy_), static_cast<StagedIo*>(&on_drives)}) {
    ReadTurn turn;
    EXPECT_FALSE(turn.busy());
    send(FUSE_WRITE, 1);
    ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, *staging, &is_data_, &turn), 0);
    EXPECT_TRUE(turn.busy());
    EXPECT_TRUE(turn.held_here());
    turn.leave();
  }
}

// A worker that took the turn just as the volume went quiet (its try_take
// raced the holder's last quiet read) lets go of it on its next read, or
// it would keep the turn through requests that wait and never hand it on.
TEST_F(ReadTurnTest, TurnTakenAsTheVolumeWentQuietIsLetGoOf) {
  ASSERT_TRUE(turn_.try_take());
  for (uint32_t i = 0; i < ReadTurn::kQuietReadsToFree; ++i) turn_.note_holder_read(true);
  ASSERT_FALSE(turn_.busy());
  ASSERT_TRUE(turn_.try_take()) << "the race's outcome: held on a quiet volume";
  send(FUSE_LOOKUP, 1);
  ASSERT_GT(read_as_a(idle_), 0);
  EXPECT_FALSE(turn_.held_here());
}

// On a quiet volume nobody holds the turn: both workers read, and each
// takes a request without being called.
TEST_F(ReadTurnTest, OnAQuietVolumeEveryWorkerReads) {
  ReadTurn quiet;
  TurnWorker b, c;
  b.start(worker_fd(), quiet);
  c.start(worker_fd(), quiet);
  send(FUSE_LOOKUP, 1);
  send(FUSE_GETATTR, 2);
  b.thread.join();
  c.thread.join();
  EXPECT_GT(b.n.load(), 0);
  EXPECT_GT(c.n.load(), 0);
  EXPECT_EQ(b.unique + c.unique, 3u) << "each took one of the two";
  EXPECT_FALSE(quiet.busy());
  EXPECT_EQ(quiet.helps_called(), 0u);
}

// kQuietReadsToFree quiet reads of the holder in a row make the volume
// quiet: the turn is let go of and the waiting worker reads; a read that
// was not quiet starts the count again.
TEST_F(ReadTurnTest, HolderReadsThatFindTheVolumeQuietWakeTheWaitingWorkers) {
  a_holds_while_b_waits(idle_);
  // A's first read may have counted as quiet (a slow first read() here):
  // start from a read that found a request waiting.
  EXPECT_FALSE(turn_.note_holder_read(false));
  for (uint32_t i = 1; i < ReadTurn::kQuietReadsToFree; ++i) EXPECT_FALSE(turn_.note_holder_read(true));
  EXPECT_FALSE(turn_.note_holder_read(false));
  for (uint32_t i = 1; i < ReadTurn::kQuietReadsToFree; ++i) EXPECT_FALSE(turn_.note_holder_read(true));
  EXPECT_TRUE(turn_.busy());
  EXPECT_TRUE(turn_.held_here());
  EXPECT_EQ(b_.n.load(), -2) << "the waiting worker read while the volume was busy";
  EXPECT_TRUE(turn_.note_holder_read(true));
  EXPECT_FALSE(turn_.busy());
  EXPECT_FALSE(turn_.held_here());
  send(FUSE_READ, 7);
  EXPECT_EQ(b_took(), 7u);
}

// The test's thread is worker A, with a LoneCaller told of every request.
class LoneCallerReaderTest : public RequestReaderTest {
 protected:
  void SetUp() override {
    RequestReaderTest::SetUp();
    lone_.set_enabled(true);
    open_window(spin_);
  }
  ssize_t read_as_a(ReadTurn& turn) {
    return reader_.read(worker_fd(), buf_, sizeof buf_, idle_, &is_data_, &turn, &spin_, &lone_);
  }
  // A takes `turn` with the program's first request (so the volume is
  // busy); b then finds nothing to read and waits for the turn.
  void a_holds_while_b_waits(ReadTurn& turn, TurnWorker& b) {
    send(FUSE_GETATTR, 1, 100);
    ASSERT_GT(read_as_a(turn), 0);
    ASSERT_TRUE(turn.held_here());
    b.start(worker_fd(), turn);
    wait_until_waiting(turn);
  }

  ReadSpin spin_;
  LoneCaller lone_;
  FakeStaging idle_{false};
  bool is_data_ = false;
};

TEST_F(LoneCallerReaderTest, OneProgramsMetadataRequestsKeepOneReader) {
  ReadTurn turn;
  send(FUSE_LOOKUP, 1, 100);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 1u);
  EXPECT_TRUE(turn.busy()) << "a quiet volume, but one program alone";
  EXPECT_TRUE(turn.held_here());
  turn.leave();
}

TEST_F(LoneCallerReaderTest, ADataRequestOrASecondCallerLeavesEveryWorkerReading) {
  const uint64_t began = monotonic_ns();
  ReadTurn first;
  send(FUSE_WRITE, 1, 100);
  ASSERT_GT(read_as_a(first), 0);
  first.leave();
  ReadTurn after_write;
  send(FUSE_LOOKUP, 2, 100);
  ASSERT_GT(read_as_a(after_write), 0);
  EXPECT_FALSE(after_write.busy()) << "a write came within the quiet period";

  LoneCaller other;
  other.set_enabled(true);
  lone_.set_enabled(false);
  ReadTurn second_caller;
  for (uint32_t pid : {100u, 200u}) {
    send(FUSE_GETATTR, pid, pid);
    ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle_, &is_data_, nullptr, &spin_, &other), 0);
  }
  send(FUSE_GETATTR, 3, 200);
  ASSERT_GT(reader_.read(worker_fd(), buf_, sizeof buf_, idle_, &is_data_, &second_caller, &spin_, &other), 0);
  if (monotonic_ns() - began >= LoneCaller::kQuietNs) GTEST_SKIP() << "too slow a machine for the quiet period";
  EXPECT_FALSE(second_caller.busy()) << "two callers within the quiet period";
}

// A's read of a write ends the lone program's run: the turn is let go of
// and the waiting worker woken to read as every worker does.
TEST_F(LoneCallerReaderTest, TheRunsEndLetsEveryWorkerReadAgainAtOnce) {
  ReadTurn turn;
  TurnWorker b;
  a_holds_while_b_waits(turn, b);
  send(FUSE_WRITE, 2, 100);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  EXPECT_FALSE(turn.busy());
  EXPECT_FALSE(turn.held_here());
  ReadTurn::leave_held_turn();  // (if it failed: so that b reads all the same)
  send(FUSE_GETATTR, 3, 100);
  b.thread.join();
  EXPECT_EQ(b.unique, 3u) << "woken, the waiting worker reads";
}

// A wait with a timeout ends unwoken after it, counted out again, and a
// nudge with no waiter leaves no wake-up behind.
TEST(ReadTurnWaitTest, AWaitWithATimeoutEndsUnwokenAndCountedOut) {
  ReadTurn turn;
  ASSERT_TRUE(turn.usable());
  turn.note_busy();
  std::promise<void> held;
  std::promise<void> release;
  std::thread holder([&] {
    ASSERT_TRUE(turn.try_take());
    held.set_value();
    release.get_future().wait();
    turn.leave();
  });
  held.get_future().wait();
  EXPECT_EQ(turn.wait(1), ReadTurn::Woken::timed_out);
  EXPECT_EQ(turn.waiting(), 0u);
  turn.nudge();  // nobody waits: nothing is counted
  EXPECT_EQ(turn.wait(1), ReadTurn::Woken::timed_out) << "a nudge with no waiter leaves nothing behind";
  release.set_value();
  holder.join();
  EXPECT_EQ(turn.wait(1), ReadTurn::Woken::took_turn);
  turn.leave();
}

// IO on the volume keeps it busy past the run's end.
TEST(ReadTurnLoneTest, TheRunsEndFreesOnlyATurnNoIoMadeBusy) {
  ReadTurn lone_only;
  lone_only.note_lone_program();
  EXPECT_TRUE(lone_only.busy());
  EXPECT_TRUE(lone_only.free_if_only_lone());
  EXPECT_FALSE(lone_only.busy());
  EXPECT_FALSE(lone_only.free_if_only_lone()) << "quiet already";
  ReadTurn with_io;
  with_io.note_lone_program();
  with_io.note_busy();
  EXPECT_FALSE(with_io.free_if_only_lone());
  EXPECT_TRUE(with_io.busy());
}

TEST_F(LoneCallerReaderTest, DisabledLeavesEveryWorkerReading) {
  lone_.set_enabled(false);
  ReadTurn turn;
  send(FUSE_LOOKUP, 1, 100);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_FALSE(turn.busy());
}

// The second request, queued before the holder read the first (a close's
// RELEASE, then an open), stays for the holder: a helper on another CPU
// would answer it from there and move the program.
TEST_F(LoneCallerReaderTest, HolderCallsNoHelpForALoneProgramsRequestFoundWaiting) {
  ReadTurn turn;
  TurnWorker b;
  a_holds_while_b_waits(turn, b);
  send(FUSE_RELEASE, 2, 0);
  send(FUSE_OPENDIR, 3, 100);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 2u);
  if (turn.helps_called() != 0) {
    b.thread.join();  // called, it takes request 3
    FAIL() << "a helper was called for request " << b.unique;
  }
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 3u) << "the holder takes it itself";
  EXPECT_EQ(b.n.load(), -2) << "the waiting worker read a request";
  ReadTurn::leave_held_turn();  // let it go: it takes the turn and the next request
  send(FUSE_GETATTR, 4, 100);
  b.thread.join();
  EXPECT_EQ(b.unique, 4u);
}

// Following (lone_caller_follow.h): the holder that reads a lone program's
// requests holds itself to that program's CPU at SCHED_IDLE until the run
// ends; a waiting worker puts a stalled follower back and takes the
// request; a worker started by a follower starts put back. Needs 2 CPUs
// and the right to raise a thread back from SCHED_IDLE.
bool may_raise_from_idle() {
  bool ok = false;
  std::thread probe([&ok] {
    sched_param none{};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) return;
    ok = sched_setscheduler(0, SCHED_OTHER, &none) == 0;
  });
  probe.join();
  return ok;
}

bool same_cpus(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b) != 0; }

cpu_set_t cpus_of_this_thread() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  sched_getaffinity(0, sizeof cpus, &cpus);
  return cpus;
}

class FollowTest : public LoneCallerReaderTest {
 public:
  using RequestReaderTest::send;

 protected:
  void SetUp() override {
    LoneCallerReaderTest::SetUp();
    original_ = cpus_of_this_thread();
    if (CPU_COUNT(&original_) < 2) GTEST_SKIP() << "one CPU: nothing to follow to";
    if (!may_raise_from_idle()) GTEST_SKIP() << "no right to raise a thread back from SCHED_IDLE";
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &original_)) program_cpu_ = cpu;
    }
    lone_.set_may_follow(true);
    // The lone program: a thread held to the last CPU, asleep there.
    std::promise<uint32_t> tid;
    program_ = std::thread([this, &tid] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(program_cpu_, &one);
      sched_setaffinity(0, sizeof one, &one);
      sched_yield();
      tid.set_value(static_cast<uint32_t>(gettid()));
      done_.get_future().wait();
    });
    program_tid_ = tid.get_future().get();
  }
  void TearDown() override {
    if (program_.joinable()) {
      done_.set_value();
      program_.join();
    }
    // The test's thread as it was, whatever a failed test left.
    sched_param none{};
    sched_setscheduler(0, SCHED_OTHER, &none);
    sched_setaffinity(0, sizeof original_, &original_);
    ReadTurn::leave_held_turn();
    LoneCallerReaderTest::TearDown();
  }
  // A second worker, told of the lone program and looking out for the
  // follower; joined whatever fails before the test does: it is given the
  // turn and a request to end on.
  struct LookOut : TurnWorker {
    LookOut(FollowTest& test, ReadTurn& turn) : test(test) { start(test.worker_fd(), turn, &test.spin_, &test.lone_); }
    ~LookOut() {
      if (!thread.joinable()) return;
      ReadTurn::leave_held_turn();  // asleep with no timeout, it takes the turn
      test.send(FUSE_READ, 99, 0);
      thread.join();
    }
    FollowTest& test;
  };
  bool held_to_program_cpu() const {
    cpu_set_t cpus = cpus_of_this_thread();
    return CPU_COUNT(&cpus) == 1 && CPU_ISSET(program_cpu_, &cpus);
  }

  cpu_set_t original_{};
  int program_cpu_ = -1;
  uint32_t program_tid_ = 0;
  std::thread program_;
  std::promise<void> done_;
};

TEST_F(FollowTest, TheReaderIsHeldToTheProgramsCpuLoweredUntilTheRunEnds) {
  ReadTurn turn;
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
  EXPECT_TRUE(held_to_program_cpu());
  EXPECT_TRUE(lone_.following());
  send(FUSE_RELEASEDIR, 2, 0);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE) << "a request without its caller keeps the reader where it is";
  EXPECT_TRUE(held_to_program_cpu());
  send(FUSE_READ, 3, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 3u);
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "the run ended with a read";
  EXPECT_TRUE(same_cpus(cpus_of_this_thread(), original_));
  EXPECT_FALSE(lone_.following());
}

TEST_F(FollowTest, NotWhereTheLoneCallerForbidsIt) {
  lone_.set_may_follow(false);
  ReadTurn turn;
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_TRUE(turn.busy()) << "one reader all the same";
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  EXPECT_TRUE(same_cpus(cpus_of_this_thread(), original_));
  EXPECT_FALSE(lone_.following());
}

// b waits with no timeout while A holds the turn without following; A's
// next read follows and wakes b to look out. A then reads no more: b sees
// a request waiting at two looks with no read between, puts A back and
// takes the request.
TEST_F(FollowTest, AStalledFollowerIsPutBackAndAWaitingWorkerTakesTheRequest) {
  ReadTurn turn;
  // The test's thread, lowered, may wait long for its CPU on a loaded
  // machine: never idle long enough to be put back as idle instead.
  lone_.set_idle_ns(UINT64_MAX / 4);
  lone_.set_may_follow(false);
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  ASSERT_TRUE(turn.held_here());
  LookOut b(*this, turn);
  wait_until_waiting(turn);
  lone_.set_may_follow(true);
  send(FUSE_GETATTR, 2, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  ASSERT_EQ(sched_getscheduler(0), SCHED_IDLE);
  // Woken, b finds nothing and waits again, now with a timeout.
  while (!lone_.guarded() || turn.waiting() == 0) std::this_thread::yield();
  const uint64_t sent = monotonic_ns();
  send(FUSE_GETATTR, 3, program_tid_);
  b.thread.join();
  ASSERT_GT(b.n.load(), 0);
  EXPECT_EQ(b.unique, 3u) << "the waiting worker took the stalled reader's request";
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "put back by the waiting worker";
  EXPECT_TRUE(same_cpus(cpus_of_this_thread(), original_));
  EXPECT_FALSE(lone_.following());
  EXPECT_EQ(lone_.follow_stalls(), 1u);
  send(FUSE_GETATTR, 4, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  // The back-off (at least kMinBackOffNs from the stop, which came after
  // `sent`) can be told only while it certainly lasts.
  if (monotonic_ns() - sent < LoneCaller::kMinBackOffNs) {
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "the reader does not follow again during the back-off";
  }
}

// The program stops asking: the look-out finds the follower idle for
// LoneCaller::kIdleNs, puts it back and sleeps with no timeout again; the
// follower's next read sees it was put back and follows afresh.
TEST_F(FollowTest, AnIdleFollowerIsPutBackByTheLookOut) {
  ReadTurn turn;
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  ASSERT_EQ(sched_getscheduler(0), SCHED_IDLE);
  LookOut b(*this, turn);
  while (lone_.stops() == 0) std::this_thread::yield();
  EXPECT_FALSE(lone_.following());
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "put back by the look-out";
  EXPECT_TRUE(same_cpus(cpus_of_this_thread(), original_));
  EXPECT_EQ(lone_.follow_stalls(), 0u) << "idle is no stall";
  EXPECT_TRUE(lone_.may_follow(monotonic_ns())) << "and backs nothing off";
  send(FUSE_GETATTR, 2, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  EXPECT_EQ(unique_of(buf_), 2u) << "the look-out took nothing";
  EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE) << "followed afresh";
  EXPECT_TRUE(held_to_program_cpu());
  EXPECT_EQ(lone_.follow_runs(), 2u);
  ReadTurn::leave_held_turn();  // b takes the turn
  send(FUSE_READ, 3, 0);
  b.thread.join();
  EXPECT_EQ(b.unique, 3u);
}

// A holder that lets go of the turn mid-request (before it waits for IO or
// a gate) stops following there.
TEST_F(FollowTest, LettingGoOfTheTurnMidRequestEndsTheFollow) {
  ReadTurn turn;
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  ASSERT_EQ(sched_getscheduler(0), SCHED_IDLE);
  ReadTurn::leave_held_turn();
  EXPECT_FALSE(turn.held_here());
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  EXPECT_TRUE(same_cpus(cpus_of_this_thread(), original_));
  EXPECT_FALSE(lone_.following());
}

TEST_F(FollowTest, AWorkerStartedByAFollowerStartsPutBack) {
  ReadTurn turn;
  send(FUSE_GETATTR, 1, program_tid_);
  ASSERT_GT(read_as_a(turn), 0);
  ASSERT_EQ(sched_getscheduler(0), SCHED_IDLE);
  int policy = -1;
  cpu_set_t cpus{};
  std::thread started([&] {
    RequestReader reader;  // as a new worker's first read makes it
    policy = sched_getscheduler(0);
    cpus = cpus_of_this_thread();
  });
  started.join();
  EXPECT_EQ(policy, SCHED_OTHER);
  EXPECT_TRUE(same_cpus(cpus, original_));
}

}  // namespace
}  // namespace peregrine::fs
