// StatsLog: the daemon's periodic one-line summary of the engine's counters
// (stats.log_interval_s), for people reading the log or the journal rather
// than running `peregrine stats`. Each tick diffs every drive's counters
// against the previous tick. An interval without IO and without new errors
// writes nothing, so an idle volume keeps the log quiet.
//
// Thread rules: construct and destroy on one thread (the daemon's main
// thread). StatsLog owns one thread that sleeps between ticks; the
// destructor wakes and joins it. The sink is called on that thread only.
// Engine::stats() is safe from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "peregrine/engine/drive_stats.h"
#include "peregrine/engine/engine.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

// The summary of one interval of `seconds` between two snapshots of every
// drive's counters; "" when nothing happened. Pure: unit-tested directly.
std::string stats_line(const std::vector<DriveStats>& before, const std::vector<DriveStats>& after, double seconds);

class StatsLog {
 public:
  StatsLog(const Engine& engine, uint32_t interval_s, std::function<void(const std::string&)> sink);
  ~StatsLog();
  StatsLog(const StatsLog&) = delete;
  StatsLog& operator=(const StatsLog&) = delete;

 private:
  void run() EXCLUDES(mu_);
  std::vector<DriveStats> snapshot() const;

  const Engine& engine_;
  const uint32_t interval_s_;
  std::function<void(const std::string&)> sink_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace peregrine::fs
