// DriveThread: one thread serving one or more drives. Each turn it runs a
// round of every drive it serves, then sleeps in their shared
// CompletionWaker until a completion, a submitter's wake-up or the earliest
// shaped deadline.
//
// Why several drives per thread: a thread per drive sleeps and wakes for
// nearly every completion once drives outnumber CPUs, and on virtual
// machines each wake-up costs tens of microseconds. A thread that serves
// the drives placed on its CPU finds their completions together. With no
// more drives than CPUs each drive still has a thread of its own (Falcon).
//
// Thread rules: create(), attach_drives(), start(), join() and the
// destructor run on the engine's owning thread; run() is the thread
// itself. Stop it by calling request_stop() on each of its drives, then
// join(). The DriveThread (its waker) must outlive its drives: devices keep
// a pointer to the waker.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "drive.h"
#include "peregrine/util/result.h"

namespace peregrine {

class DriveThread {
 public:
  // `cpu` < 0: not pinned. `name` shows in top -H and /proc (15 chars).
  static Expected<std::unique_ptr<DriveThread>> create(std::vector<Drive*> drives, int cpu, std::string name);
  ~DriveThread();  // joins
  DriveThread(const DriveThread&) = delete;
  DriveThread& operator=(const DriveThread&) = delete;

  // Ties each drive (and its device) to this thread's waker.
  Status attach_drives();
  void start();
  void join();

 private:
  DriveThread(std::vector<Drive*> drives, int cpu, std::string name)
      : drives_(std::move(drives)), cpu_(cpu), name_(std::move(name)) {}
  void run();
  bool all_finished() const;

  std::vector<Drive*> drives_;
  const int cpu_;
  const std::string name_;
  DriveThreadSleep sleep_;
  std::thread thread_;
};

}  // namespace peregrine
