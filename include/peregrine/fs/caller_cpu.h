// CallerCpu: the CPU a caller's thread last ran on, from /proc/<tid>/stat
// (the "processor" field), for the classic reader that follows a lone
// program (lone_caller_follow.h). The file of the last thread asked stays
// open, so that asking again costs one pread().
//
// Thread rules: one per worker, used by that worker only.
#pragma once

#include <cstdint>
#include <string_view>

namespace peregrine::fs {

class CallerCpu {
 public:
  CallerCpu() = default;
  ~CallerCpu();
  CallerCpu(const CallerCpu&) = delete;
  CallerCpu& operator=(const CallerCpu&) = delete;

  // The CPU thread `tid` last ran on, or -1 if it cannot be told (the
  // thread is gone, or lives in a pid namespace this /proc does not show).
  int of(uint32_t tid);

  // The "processor" field (the 39th) of a /proc/<tid>/stat line, or -1.
  // The command name (2nd field) may hold spaces and parentheses: fields
  // are counted after its last ')'.
  static int parse_stat(std::string_view line);

 private:
  uint32_t tid_ = 0;
  int fd_ = -1;
};

}  // namespace peregrine::fs
