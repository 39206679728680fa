#include "peregrine/fs/submitter_pool.h"

namespace peregrine::fs {
namespace {

// A thread's own Submitter, returned to its pool when the thread exits.
struct ThreadSubmitter {
  SubmitterPool* pool = nullptr;
  Submitter* sub = nullptr;
  ~ThreadSubmitter() {
    if (pool != nullptr && sub != nullptr) pool->release(sub);
  }
};

thread_local ThreadSubmitter tls_submitter;

}  // namespace

SubmitterPool::~SubmitterPool() {
  // A thread that still holds its Submitter must not give it back later.
  if (tls_submitter.pool == this) tls_submitter = ThreadSubmitter{};
}

Submitter* SubmitterPool::acquire() {
  MutexLock lock(mu_);
  if (!free_.empty()) {
    Submitter* s = free_.back();
    free_.pop_back();
    return s;
  }
  auto s = engine_.open_submitter();
  if (!s) return nullptr;
  all_.push_back(std::move(*s));
  return all_.back().get();
}

void SubmitterPool::release(Submitter* s) {
  s->unplug();
  // The poll stop names the thread's own work (a ring that may be gone by
  // the time another thread takes this submitter): it leaves with the thread.
  s->set_poll_stop(nullptr, nullptr);
  s->set_direct_pieces(true);  // as the poll stop: the thread's choice
  MutexLock lock(mu_);
  free_.push_back(s);
}

Submitter* SubmitterPool::for_this_thread() {
  if (tls_submitter.pool == this && tls_submitter.sub != nullptr) return tls_submitter.sub;
  if (tls_submitter.pool != nullptr && tls_submitter.sub != nullptr) tls_submitter.pool->release(tls_submitter.sub);
  tls_submitter.pool = this;
  tls_submitter.sub = acquire();
  return tls_submitter.sub;
}

bool SubmitterPool::staged_on_this_thread() const {
  return tls_submitter.pool == this && tls_submitter.sub != nullptr && tls_submitter.sub->has_staged();
}

void SubmitterPool::unplug_this_thread(Submitter::Completions where) {
  if (tls_submitter.pool == this && tls_submitter.sub != nullptr) tls_submitter.sub->unplug(where);
}

}  // namespace peregrine::fs
