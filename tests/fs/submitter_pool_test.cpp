// SubmitterPool: a thread's submitter goes back to the pool when the
// thread is done with it, and the next thread takes it as new: in
// particular without the first thread's poll stop, which names that
// thread's own work (a FUSE ring, gone after unmount; the daemon's main
// thread once took a ring thread's submitter to write the last checkpoint
// and asked the destroyed ring whether requests waited).
#include "peregrine/fs/submitter_pool.h"

#include <thread>

#include "engine_fixture.h"

namespace peregrine::testing {
namespace {

bool never_called(const void*) {
  ADD_FAILURE() << "a poll stop set by another thread was called";
  return true;
}

TEST_F(EngineFixture, SubmitterTakenFromThePoolHasNoPollStopOfItsLastThread) {
  make_members(2, 1 << 20);
  start(EngineConfig{}, 128 * 1024, specs());
  fs::SubmitterPool pool(*engine_);
  Submitter* first = nullptr;
  std::thread ring([&] {
    first = pool.for_this_thread();
    ASSERT_NE(first, nullptr);
    first->set_poll_stop(&never_called, nullptr);
    EXPECT_TRUE(first->polls());
  });  // the thread's end gives the submitter back
  ring.join();
  Submitter* next = pool.for_this_thread();
  ASSERT_EQ(next, first) << "the pool hands out the submitter it got back";
  EXPECT_FALSE(next->polls());
  // A lone 256 KiB write and read-back through it, a 128 KiB share on each
  // member (large shares ask the poll stop), as the last checkpoint is
  // written: data right, and the old poll stop never asked.
  constexpr size_t kBytes = 256 * 1024;
  AlignedBuffer out(kBytes), in(kBytes);
  fill(out, 3);
  for (auto [op, buf] : {std::pair{IoOp::write, &out}, std::pair{IoOp::read, &in}}) {
    Request rq = request_for(op, 0, *buf);
    Waiter done;
    done.arm(rq);
    ASSERT_EQ(next->add(rq), 0);
    next->unplug();
    done.wait();
    ASSERT_EQ(done.result.load(), 0);
  }
  EXPECT_EQ(std::memcmp(in.data(), out.data(), kBytes), 0);
}

}  // namespace
}  // namespace peregrine::testing
