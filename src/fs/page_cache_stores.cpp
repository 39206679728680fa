#include "page_cache_stores.h"

#include <pthread.h>

#include <csignal>

namespace peregrine::fs {

PageCacheStores::PageCacheStores(std::function<void(Job&)> run) : run_(std::move(run)) {
  thread_ = std::thread([this] { serve(); });
}

PageCacheStores::~PageCacheStores() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PageCacheStores::push(Job job) {
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void PageCacheStores::serve() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "pg-cache-store");
  for (;;) {
    Job job;
    {
      MutexLock lock(mu_);
      lock.wait(cv_, [this] {
        mu_.assert_held();  // the wait holds it while it asks
        return stopping_ || !queue_.empty();
      });
      // Queued jobs still run at a stop: each owes a reply.
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    run_(job);
  }
}

}  // namespace peregrine::fs
