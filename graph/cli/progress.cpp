#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace peregrine::graph::cli {

ProgressFn stderr_progress(const std::string& command, const std::string& last_phase, bool quiet) {
  if (quiet) return [](std::string_view, uint64_t, uint64_t) {};
  struct State {
    int last_pct = -1;
    uint64_t last_step = UINT64_MAX;
    std::string phase;
  };
  auto s = std::make_shared<State>();
  const bool tty = ::isatty(STDERR_FILENO);
  return [=](std::string_view phase, uint64_t done, uint64_t total) {
    if (total == 0 && done != 0) {
      // A stream of unknown length (import from a pipe): how much so far,
      // every 16 MiB on a terminal, every GiB in a log.
      const uint64_t mib = done >> 20;
      const uint64_t step = mib / (tty ? 16 : 1024);
      if (phase == s->phase && step == s->last_step) return;
      if (tty && phase != s->phase && !s->phase.empty()) std::fprintf(stderr, "\n");
      s->phase = std::string(phase);
      s->last_step = step;
      s->last_pct = -1;
      std::fprintf(stderr, tty ? "\r%s: %-8s %llu MiB" : "%s: %s %llu MiB\n", command.c_str(), s->phase.c_str(),
                   static_cast<unsigned long long>(mib));
      return;
    }
    int pct = total ? static_cast<int>(done * 100 / total) : 100;
    // On a terminal redraw every percent; in a log, one line per 10%.
    if (phase == s->phase && (pct == s->last_pct || (!tty && pct / 10 == s->last_pct / 10 && pct != 100))) return;
    if (tty && phase != s->phase && !s->phase.empty()) std::fprintf(stderr, "\n");
    s->phase = std::string(phase);
    s->last_pct = pct;
    std::fprintf(stderr, tty ? "\r%s: %-8s %3d%%" : "%s: %s %d%%\n", command.c_str(), s->phase.c_str(), pct);
    if (tty && pct == 100 && phase == last_phase) std::fprintf(stderr, "\n");
  };
}

}  // namespace peregrine::graph::cli
