// MemberErrorLog: turns the engine's IO error reports into log lines that
// name the member and what happened (an IO error, a device that is gone, a
// member shorter than the volume), and remembers the last failed write or
// flush so that the line saying the volume turned read-only can name the
// member that caused it.
//
// Thread rules: report() runs on drive threads (with the drive's dispatch
// lock held: it only formats and logs, a few lines per member at most);
// last_write_failure() on any thread. Internally synchronised.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "peregrine/engine/engine_config.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/mutex.h"
#include "peregrine/util/thread_annotations.h"

namespace peregrine::fs {

class MemberErrorLog {
 public:
  // Lines logged per member before it only counts (peregrine stats has the totals).
  static constexpr uint64_t kLoggedPerMember = 5;

  explicit MemberErrorLog(LogLine log);
  // The members' paths in index order, before any IO.
  void set_names(std::vector<std::string> names) EXCLUDES(mu_) {
    MutexLock lk(mu_);
    names_ = std::move(names);
  }
  // Member `index` is another drive now (online replace), or a new one
  // (online restripe). Any thread.
  void rename(uint32_t index, const std::string& name) EXCLUDES(mu_) {
    MutexLock lk(mu_);
    if (index >= names_.size()) names_.resize(index + 1);
    names_[index] = name;
  }

  void report(const IoErrorReport& r) EXCLUDES(mu_);
  // "member PATH (index I): write at member offset N: Input/output error",
  // or "" when no write or flush has failed.
  std::string last_write_failure() const EXCLUDES(mu_);

  static std::string describe(const IoErrorReport& r, const std::string& name);

 private:
  LogLine log_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // kEngineMaxDrives: members a restripe adds too
  mutable Mutex mu_;
  std::vector<std::string> names_ GUARDED_BY(mu_);
  std::string last_write_failure_ GUARDED_BY(mu_);
};

}  // namespace peregrine::fs
