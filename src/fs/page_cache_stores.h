// PageCacheStores: a thread that answers the writes whose bytes must first
// go into the kernel's page cache (io_gates.h, fs_write.cpp). The store
// (FUSE_NOTIFY_STORE) waits for every page of its range that the kernel
// holds locked, and a page is locked while a read that fills it waits for
// this daemon to answer: the worker or ring thread that ran the write may
// be the one that has to serve that read. So the store, and the write's
// reply after it, run here, and the thread that ran the write goes back to
// serving requests.
//
// Thread rules: push() from any thread; the jobs run in order on the one
// thread of the object, which the destructor joins after the queue is
// empty. Every pushed job runs: the daemon waits for its replies (each job
// is a data op of FsContext) before it lets the session go.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "transport/data_calls.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class PageCacheStores {
 public:
  struct Job {
    DataReply reply;
    uint64_t ino = 0;
    uint64_t offset = 0;
    std::string bytes;
  };
  // `run` stores one job's bytes and answers its request.
  explicit PageCacheStores(std::function<void(Job&)> run);
  ~PageCacheStores();
  PageCacheStores(const PageCacheStores&) = delete;
  PageCacheStores& operator=(const PageCacheStores&) = delete;

  void push(Job job);

 private:
  void serve();

  const std::function<void(Job&)> run_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace peregrine::fs
