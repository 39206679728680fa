#include "blocking_ops.h"

#include <pthread.h>

#include <csignal>

namespace peregrine::fs {

BlockingOps::BlockingOps(unsigned threads, std::function<void(const fuse_buf&)> run) : run_(std::move(run)) {
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

void BlockingOps::push(const fuse_buf& buf) {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    queue_.push_back(buf);
  }
  cv_.notify_one();
}

void BlockingOps::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void BlockingOps::serve() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "pg-blocking");
  for (;;) {
    fuse_buf buf;
    {
      MutexLock lock(mu_);
      lock.wait(cv_, [this] {
        mu_.assert_held();  // a wait predicate: runs under lock
        return stopping_ || !queue_.empty();
      });
      if (stopping_) return;
      buf = queue_.front();
      queue_.pop_front();
    }
    run_(buf);
  }
}

}  // namespace peregrine::fs
