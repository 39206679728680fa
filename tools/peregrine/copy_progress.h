// CopyProgress: the progress line of a long copy on stderr (`peregrine
// replace`, `peregrine grow --add`). On a terminal one line redrawn at most
// four times a second, in a log one line per 10 % of each phase; each with
// the rate and the time left: "replace: copy  42%  430 of 1024 MiB
// 612 MiB/s  0:01 left".
//
// Thread rules: one thread calls it (the command's main thread, from the
// library's progress callback).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace peregrine::cli {

class CopyProgress {
 public:
  // `command` starts every line ("replace", "grow --add").
  explicit CopyProgress(std::string command);

  // `done` of `total` bytes of `phase` ("copy", "verify", "restripe"); a
  // new phase starts its own line, rate and clock.
  void operator()(std::string_view phase, uint64_t done, uint64_t total);

 private:
  const std::string command_;
  const bool tty_;
  std::string phase_;
  std::chrono::steady_clock::time_point start_, last_;
  int last_pct_ = -1;
  bool line_ended_ = false;
};

// "1:05" / "1:02:03".
std::string clock_text(double seconds);

}  // namespace peregrine::cli
