#include "copy_progress.h"

#include <unistd.h>

#include <cstdio>

namespace peregrine::cli {

std::string clock_text(double seconds) {
  long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

CopyProgress::CopyProgress(std::string command) : command_(std::move(command)), tty_(::isatty(STDERR_FILENO) != 0) {}

void CopyProgress::operator()(std::string_view phase, uint64_t done, uint64_t total) {
  using clock = std::chrono::steady_clock;
  const auto now = clock::now();
  if (phase != phase_) {
    if (tty_ && !phase_.empty() && !line_ended_) std::fprintf(stderr, "\n");
    phase_ = std::string(phase);
    start_ = now;
    last_pct_ = -1;
    line_ended_ = false;
    last_ = clock::time_point{};
  }
  const int pct = total ? static_cast<int>(done * 100 / total) : 100;
  const bool end = done >= total;
  if (line_ended_) return;
  if (tty_ ? (!end && now - last_ < std::chrono::milliseconds(250)) : (pct / 10 == last_pct_ / 10 && !end)) return;
  last_ = now;
  last_pct_ = pct;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  std::string eta = rate > 0 && !end ? "  " + clock_text(static_cast<double>(total - done) / rate) + " left" : "";
  std::fprintf(
      stderr,
      tty_ ? "\r%s: %-6s %3d%%  %llu of %llu MiB  %.0f MiB/s%s\033[K" : "%s: %s %d%%  %llu of %llu MiB  %.0f MiB/s%s\n",
      command_.c_str(), phase_.c_str(), pct, static_cast<unsigned long long>(done >> 20),
      static_cast<unsigned long long>(total >> 20), rate / (1 << 20), eta.c_str());
  if (end) {
    if (tty_) std::fprintf(stderr, "\n");
    line_ended_ = true;
  }
}

}  // namespace peregrine::cli
