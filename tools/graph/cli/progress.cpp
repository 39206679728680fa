#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace peregrine::graph::cli {

ProgressFn stderr_progress(const std::string& command, const std::string& last_phase, bool quiet) {
  if (quiet) return [](std::string_view, uint64_t, uint64_t) {};
  struct State {
    int last_pct = -1;
    std::string phase;
  };
  auto s = std::make_shared<State>();
  const bool tty = ::isatty(STDERR_FILENO);
  return [=](std::string_view phase, uint64_t done, uint64_t total) {
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
