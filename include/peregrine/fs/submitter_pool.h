// SubmitterPool: hands engine Submitters to threads that do not own one for
// good — the metadata layer's committer, FUSE worker threads that come and
// go. A thread borrows one (acquire/release), or keeps one for its lifetime
// with for_this_thread(), which gives it back when the thread exits.
//
// Thread rules: every method is thread-safe. A borrowed Submitter is used by
// the borrowing thread alone. Destroy the pool before the Engine, after the
// threads that used it have ended.
#pragma once

#include <memory>
#include <vector>

#include "peregrine/engine/engine.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class SubmitterPool {
 public:
  explicit SubmitterPool(Engine& engine) : engine_(engine) {}
  SubmitterPool(const SubmitterPool&) = delete;
  SubmitterPool& operator=(const SubmitterPool&) = delete;
  ~SubmitterPool();

  Engine& engine() { return engine_; }
  // Null only when the engine has no free submitter slot.
  Submitter* acquire() EXCLUDES(mu_);
  void release(Submitter* s) EXCLUDES(mu_);
  // The calling thread's own Submitter, created on first use.
  Submitter* for_this_thread();
  // Whether the calling thread's own Submitter holds staged IO, and handing
  // that IO on (Submitter::unplug). Neither creates a Submitter.
  bool staged_on_this_thread() const;
  void unplug_this_thread(Submitter::Completions where = Submitter::Completions::on_drive_thread);

 private:
  Engine& engine_;
  Mutex mu_;
  std::vector<std::unique_ptr<Submitter>> all_ GUARDED_BY(mu_);
  std::vector<Submitter*> free_ GUARDED_BY(mu_);
};

}  // namespace peregrine::fs
